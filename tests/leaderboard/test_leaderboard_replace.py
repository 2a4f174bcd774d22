"""`leaderboard add --replace` killed with SIGKILL at its renames and mid-delete (issue 15, item 4).

The kills are real: strace's fault injection delivers SIGKILL to the `evalsuite` process on entry to the chosen
system call, before the call runs. Whatever the point, `leaderboard build` must then find one complete entry (the
old or the new one), and the next `add` must settle what the killed one left.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.leaderboard import add_submission, pack_submission
from evalsuite.leaderboard.results import scan_entries

from leaderboard_support import BASE_SEED1, REPO, cli, info

ENTRY = "search-r1-base-test"
RENAMES = "rename,renameat,renameat2"
DELETES = "unlink,unlinkat,rmdir"


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-qq", "-o", os.devnull, "true"], capture_output=True).returncode == 0


needs_strace = pytest.mark.skipif(not _strace_works(), reason="needs strace with ptrace permitted (apt-get install strace)")


@pytest.fixture(scope="module")
def versions(tmp_path_factory, scored_runs: Path) -> dict[str, Path]:
    """Two submissions filed under the same entry id: the old one and its replacement."""
    out = tmp_path_factory.mktemp("versions")
    return {
        "old": pack_submission([scored_runs / BASE_SEED1], out / "old", info(description="old version")),
        "new": pack_submission([scored_runs / BASE_SEED1], out / "new", info(description="new version")),
    }


@pytest.fixture
def results(tmp_path: Path, versions, benchmarks_dir: Path) -> Path:
    results = tmp_path / "results"
    add_submission(versions["old"], results, data_dir=benchmarks_dir, entry=ENTRY)
    return results


def add_killed(results: Path, submission: Path, data_dir: Path, *inject: str) -> subprocess.CompletedProcess:
    """`evalsuite leaderboard add --replace` under strace with the given filter and fault injection."""
    command = ["strace", "-qq", "-o", os.devnull, *inject, sys.executable, "-m", "evalsuite", "leaderboard", "add",
               str(submission), "--results", str(results), "--data-dir", str(data_dir), "--id", ENTRY, "--replace"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def built_description(results: Path, out: Path, data_dir: Path) -> tuple[str, str]:
    """Build the site; return the build output and which version the entry page shows."""
    result = cli("leaderboard", "build", "--results", results, "-o", out, "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert "site written to" in result.output and ": 1 entries" in result.output, result.output
    page = (out / "entries" / ENTRY / "index.html").read_text()
    shown = [v for v in ("old version", "new version") if v in page]
    assert len(shown) == 1
    return result.output, shown[0]


@needs_strace
@pytest.mark.parametrize(("point", "inject", "expected"), [
    # `-P` picks a rename by its first path: the entry is moved aside, then the staged copy is moved in.
    ("moving the old entry aside", ["-P", "{target}", "-e", f"trace={RENAMES}", "-e", f"inject={RENAMES}:signal=SIGKILL:when=1"], "old version"),
    ("moving the new entry in", ["-P", "{staged}", "-e", f"trace={RENAMES}", "-e", f"inject={RENAMES}:signal=SIGKILL:when=1"], "new version"),
    ("deleting the old entry", ["-e", f"trace={DELETES}", "-e", f"inject={DELETES}:signal=SIGKILL:when=3"], "new version"),
])
def test_a_replace_killed_at_any_step_leaves_one_complete_entry(point, inject, expected, results, versions, benchmarks_dir, tmp_path):
    target = results / "runs" / ENTRY
    staged = results / "runs" / f".staged-{ENTRY}"
    killed = add_killed(results, versions["new"], benchmarks_dir, *[a.format(target=target, staged=staged) for a in inject])
    assert killed.returncode == -signal.SIGKILL, f"not killed while {point}: {killed.returncode} {killed.stderr[-500:]}"
    output, shown = built_description(results, tmp_path / "site", benchmarks_dir)
    assert shown == expected
    if point != "moving the old entry aside":
        assert "warning: " in output  # the leftover of the killed add is reported, never silently ignored
    # The next add settles the interruption and files the new version cleanly.
    add_submission(versions["new"], results, data_dir=benchmarks_dir, entry=ENTRY, replace=True)
    scan = scan_entries(results)
    assert scan.entries == {ENTRY: target} and scan.notes == [] and scan.broken == []
    assert sorted(p.name for p in (results / "runs").iterdir()) == [ENTRY]


def test_build_reports_a_half_written_entry_instead_of_dropping_it(results, tmp_path, benchmarks_dir):
    (results / "runs" / ENTRY / "submission.json").unlink()  # what a kill mid-delete used to leave behind
    result = cli("leaderboard", "build", "--results", results, "-o", tmp_path / "site", "--data-dir", benchmarks_dir)
    assert result.exit_code != 0
    assert f"{results / 'runs' / ENTRY} is half-written (no submission.json) and no complete copy is left" in str(result.exception)


def test_a_stage_left_by_a_kill_while_copying_is_reported_and_the_old_entry_kept(results, versions, benchmarks_dir):
    partial = results / "runs" / f".partial-{ENTRY}-12345"
    shutil.copytree(versions["new"], partial)
    scan = scan_entries(results)
    assert scan.entries == {ENTRY: results / "runs" / ENTRY}
    assert scan.notes == [f"{partial}: an `add` killed while copying (the entry it was filing was never swapped in); delete it"]
