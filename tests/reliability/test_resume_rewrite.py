"""A resume that retries failed records loses nothing, whatever write a kill or a full disk hits.

The run here has 100 NQ examples, 10 of them failed; `evalsuite run --resume` rewrites predictions.jsonl without the
failed lines, then appends the retried ones. Before, the rewrite deleted the file and wrote it again: a kill during it
took 90 finished records down to 5, a full disk to 10. The kills are real SIGKILLs of the `evalsuite` process, sent
by strace just before its Nth write to a run-directory file (`inject=write:signal=KILL:when=N`); the full disk is
strace's injected ENOSPC and, where a tmpfs can be mounted, a real one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.agent.config import RunConfig
from evalsuite.agent.runner import RunSpec, execute
from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Generation
from evalsuite.models.replay import ReplayBackend
from evalsuite.runs import RunDirectory

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"
N = 100
# the files a resume writes, in the order it writes them: the rewrite (1 write), the manifest (1), the 10 retried
# records (one append each, batches of 4), then metrics.json and the finished manifest
WATCHED = ("predictions.jsonl", "predictions.jsonl.tmp", "manifest.json.tmp", "metrics.json.tmp")
WRITES = 14


class FailingReplay(ReplayBackend):
    """Replay whose generations fail for some example ids, as a server error after retries would."""

    def __init__(self, model: str, failing: set[str]):
        super().__init__(model)
        self.failing = failing

    def _one(self, request):  # both schedules' generations come through here
        if request.key[0] in self.failing:
            return Generation(text="", finish_reason="error", error="HTTP 503")
        return super()._one(request)


def spec(trajectories_dir: Path, benchmarks_dir: Path, out: Path) -> RunSpec:
    return RunSpec(
        model=str(trajectories_dir / NQ_RECORDING), backend="replay", tasks="nq", out=out, split="test_sub1000",
        data_dir=str(benchmarks_dir), retriever="replay", config=RunConfig(batch_size=4, subset=f"first:{N}"),
    )


def outcome(records) -> dict:
    return {r.id: (r.prediction, r.trajectory, r.stop_reason, r.status, r.metrics) for r in records}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, trajectories_dir, benchmarks_dir) -> dict[str, Path]:
    """A clean run of the 100 examples, and the same run with every tenth example failed (90 finished)."""
    root = tmp_path_factory.mktemp("runs")
    execute(spec(trajectories_dir, benchmarks_dir, root / "clean"))
    failing = {r.id for i, r in enumerate(RunDirectory(root / "clean").read_predictions()) if i % 10 == 3}
    half = spec(trajectories_dir, benchmarks_dir, root / "with_failures")
    execute(half, backend=FailingReplay(half.model, failing))
    return {"clean": root / "clean", "with_failures": root / "with_failures"}


def finished(directory: Path) -> dict:
    return outcome(r for r in RunDirectory(directory).read_predictions() if r.status == "ok")


def resume_command(trajectories_dir: Path, benchmarks_dir: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "evalsuite", "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING),
        "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir),
        "--subset", f"first:{N}", "--batch-size", "4", "--resume", "-o", str(out),
    ]


def under_strace(command: list[str], out: Path, inject: str) -> subprocess.CompletedProcess:
    """Run `command` with strace injecting `inject` into its writes to the run directory's files."""
    watched = [arg for name in WATCHED for arg in ("-P", str(out / name))]
    return subprocess.run(
        ["strace", "-f", "-qq", "-o", os.devnull, *watched, "-e", "trace=write", "-e", f"inject=write:{inject}", *command],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "1000"},
    )


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (apt-get install strace)")


def _kill_at_write(n: int, runs, tmp_path, trajectories_dir, benchmarks_dir) -> None:
    out = tmp_path / f"killed_at_{n}"
    shutil.copytree(runs["with_failures"], out)
    before = finished(out)
    assert len(before) == 90
    done = under_strace(resume_command(trajectories_dir, benchmarks_dir, out), out, f"signal=KILL:when={n}")
    assert done.returncode in (-9, 137), f"the kill at write {n} did not land: {done.returncode} {done.stderr[-500:]}"
    after = finished(out)  # reads without error: no torn line in the middle
    assert {key: after.get(key) for key in before} == before, f"a kill at write {n} lost finished records"
    # the next resume finishes the run exactly as an uninterrupted one, and leaves no temporary file
    assert subprocess.run(resume_command(trajectories_dir, benchmarks_dir, out), capture_output=True, timeout=300).returncode == 0
    assert outcome(RunDirectory(out).read_predictions()) == outcome(RunDirectory(runs["clean"]).read_predictions())
    assert not list(out.glob("*.tmp"))


@needs_strace
@pytest.mark.parametrize("n", [1, 3])  # the rewrite, the first retried record (the slow test below tries every write)
def test_a_kill_at_a_resume_write_loses_no_finished_record(n, runs, tmp_path, trajectories_dir, benchmarks_dir):
    _kill_at_write(n, runs, tmp_path, trajectories_dir, benchmarks_dir)


@needs_strace
@pytest.mark.slow
def test_a_kill_at_every_resume_write_loses_no_finished_record(runs, tmp_path, trajectories_dir, benchmarks_dir):
    for n in range(1, WRITES + 1):
        _kill_at_write(n, runs, tmp_path, trajectories_dir, benchmarks_dir)


@needs_strace
@pytest.mark.parametrize("n", [1, 7])  # the disk fills at the rewrite, at the fifth retried record
def test_a_full_disk_during_resume_is_one_line_and_loses_nothing(n, runs, tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    shutil.copytree(runs["with_failures"], out)
    before = finished(out)
    done = under_strace(resume_command(trajectories_dir, benchmarks_dir, out), out, f"error=ENOSPC:when={n}+")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"error: cannot write {out / 'predictions.jsonl'}: the disk is full" in done.stderr
    after = finished(out)
    assert {key: after.get(key) for key in before} == before
    assert len(after) == 90 + max(0, n - 3)  # the retried records written before the disk filled are kept too
    assert not list(out.glob("*.tmp"))  # the failed rewrite gave its space back
    assert subprocess.run(resume_command(trajectories_dir, benchmarks_dir, out), capture_output=True, timeout=300).returncode == 0
    assert outcome(RunDirectory(out).read_predictions()) == outcome(RunDirectory(runs["clean"]).read_predictions())


def test_a_real_full_disk_during_the_rewrite_keeps_every_finished_record(runs, tmp_path, trajectories_dir, benchmarks_dir):
    source = runs["with_failures"]
    needed = sum(f.stat().st_size for f in source.iterdir())
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    # room for the run directory and a little more, not for a second copy of predictions.jsonl
    kib = (needed + 96 * 1024) // 1024 + 1
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(mount)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        out = mount / "run"
        shutil.copytree(source, out)
        before = finished(out)
        resume = spec(trajectories_dir, benchmarks_dir, out)
        resume.resume = True
        with pytest.raises(EvalsuiteError, match="the disk is full"):
            execute(resume)
        assert finished(out) == before and len(before) == 90
        assert not list(out.glob("*.tmp"))
        # with space again (the run moved to a bigger disk), the same resume finishes the run exactly
        moved = tmp_path / "moved"
        shutil.copytree(out, moved)
        resume.out = moved
        execute(resume)
        assert outcome(RunDirectory(moved).read_predictions()) == outcome(RunDirectory(runs["clean"]).read_predictions())
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
