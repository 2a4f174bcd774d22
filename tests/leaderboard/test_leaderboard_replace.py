"""`leaderboard add --overwrite` killed with SIGKILL at its renames and mid-delete (issue 15, item 4).

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
from tests.conftest import requires_extra, skip_without_extra

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
    """`evalsuite leaderboard add --overwrite` under strace with the given filter and fault injection."""
    command = ["strace", "-qq", "-o", os.devnull, *inject, sys.executable, "-m", "evalsuite", "leaderboard", "add",
               str(submission), "--leaderboard", str(results), "--data-dir", str(data_dir), "--id", ENTRY, "--overwrite"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def built_description(results: Path, out: Path, data_dir: Path) -> tuple[str, str]:
    """Build the site; return the build output and which version the entry page shows."""
    skip_without_extra("site", "jinja2")  # the site's templates
    result = cli("leaderboard", "build", "--leaderboard", results, "-o", out, "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    assert "site written to" in result.output and ": 1 entries" in result.output, result.output
    page = (out / "entries" / ENTRY / "index.html").read_text()
    shown = [v for v in ("old version", "new version") if v in page]
    assert len(shown) == 1
    return result.output, shown[0]


def kills(results: Path, versions, data_dir: Path, syscalls: str, site: Path) -> list[str]:
    """Kill `add --overwrite` at the 1st, 2nd, … call of `syscalls` until one run gets through; after each kill the
    build must find one complete entry. Returns the version the site showed after each kill."""
    template = results.with_name("template")
    shutil.copytree(results, template)
    shown: list[str] = []
    for when in range(1, 30):
        shutil.rmtree(results)
        shutil.copytree(template, results)
        killed = add_killed(results, versions["new"], data_dir, "-e", f"trace={syscalls}", "-e", f"inject={syscalls}:signal=SIGKILL:when={when}")
        if killed.returncode == 0:
            break
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-500:]
        output, version = built_description(results, site, data_dir)
        leftovers = sorted(p.name for p in (results / "entries").iterdir() if p.name != ENTRY)
        # A leftover of the killed add is reported by the build, never silently ignored.
        assert ("warning: " in output) == bool(leftovers), (output, leftovers)
        shown.append(version)
        # The next add settles the interruption and files the new version cleanly.
        add_submission(versions["new"], results, data_dir=data_dir, entry=ENTRY, replace=True)
        scan = scan_entries(results)
        assert scan.entries == {ENTRY: results / "entries" / ENTRY} and scan.notes == [] and scan.broken == []
        assert sorted(p.name for p in (results / "entries").iterdir()) == [ENTRY]
    else:
        pytest.fail(f"add --overwrite was still killed at its 29th {syscalls} call")
    assert built_description(results, site, data_dir)[1] == "new version"
    return shown


@needs_strace
def test_a_replace_killed_at_each_of_its_renames_leaves_one_complete_entry(results, versions, benchmarks_dir, tmp_path):
    shown = kills(results, versions, benchmarks_dir, RENAMES, tmp_path / "site")
    # Before the swap the old entry is in place; once the new one is staged, killing the swap shows the new one.
    assert shown[0] == "old version" and shown[-1] == "new version"


@needs_strace
@pytest.mark.parametrize("when", [3])
def test_a_replace_killed_while_deleting_the_old_entry_leaves_the_new_one(when, results, versions, benchmarks_dir, tmp_path):
    killed = add_killed(results, versions["new"], benchmarks_dir, "-e", f"trace={DELETES}", "-e", f"inject={DELETES}:signal=SIGKILL:when={when}")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-500:]
    output, shown = built_description(results, tmp_path / "site", benchmarks_dir)
    assert shown == "new version" and "warning: " in output and ".replaced-search-r1-base-test" in output


@needs_strace
@pytest.mark.slow
def test_a_replace_killed_at_each_of_its_deletes_leaves_one_complete_entry(results, versions, benchmarks_dir, tmp_path):
    shown = kills(results, versions, benchmarks_dir, DELETES, tmp_path / "site")
    assert len(shown) >= 8 and set(shown) == {"new version"}


@requires_extra("site", "jinja2")  # the site's templates
def test_build_reports_a_half_written_entry_instead_of_dropping_it(results, tmp_path, benchmarks_dir):
    (results / "entries" / ENTRY / "submission.json").unlink()  # what a kill mid-delete used to leave behind
    result = cli("leaderboard", "build", "--leaderboard", results, "-o", tmp_path / "site", "--data-dir", benchmarks_dir)
    assert result.exit_code != 0
    assert f"{results / 'entries' / ENTRY} is half-written (no submission.json) and no complete copy is left" in str(result.exception)


def test_a_stage_left_by_a_kill_while_copying_is_reported_and_the_old_entry_kept(results, versions, benchmarks_dir):
    partial = results / "entries" / f".partial-{ENTRY}-12345"
    shutil.copytree(versions["new"], partial)
    scan = scan_entries(results)
    assert scan.entries == {ENTRY: results / "entries" / ENTRY}
    assert scan.notes == [f"{partial}: an `add` killed while copying (the entry it was filing was never swapped in); delete it"]
