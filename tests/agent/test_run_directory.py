"""`evalsuite run` end to end with the replay backend: recorded EM reproduced, resume, kill -9, shards and merge."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.agent.merge import merge_runs
from evalsuite.agent.config import RunConfig
from evalsuite.agent.runner import RunSpec, execute, parse_shard
from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Generation
from evalsuite.models.replay import ReplayBackend
from evalsuite.runs import RunDirectory

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


def replay_spec(trajectories_dir: Path, benchmarks_dir: Path, out: Path, **kw) -> RunSpec:
    """The replay run of the recorded NQ trajectories; `kw`: RunSpec fields and RunConfig settings alike."""
    settings = {"batch_size": 8, **{k: kw.pop(k) for k in list(kw) if k in RunConfig.model_fields}}
    base = dict(
        model=str(trajectories_dir / NQ_RECORDING), backend="replay", tasks="nq", out=out, split="test_sub1000",
        data_dir=str(benchmarks_dir), retriever="replay", config=RunConfig(**settings),
    )
    base.update(kw)
    return RunSpec(**base)


def outcome(records):
    """What must be identical between runs (timings aside), keyed by example."""
    return {(r.task, r.id): (r.prediction, r.trajectory, r.stop_reason, r.status, r.metrics) for r in records}


def test_replay_run_reproduces_every_recorded_nq_em(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING), "--retriever", "replay",
        "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--batch-size", "128", "-o", str(out),
    ])
    assert result.exit_code == 0, result.output
    recorded = json.loads((trajectories_dir / NQ_RECORDING).read_text())
    records = {r.id: r for r in RunDirectory(out).read_predictions()}
    assert len(records) == 1000
    assert [records[x["id"]].metrics["em"] for x in recorded] == [x["output"]["metric_score"]["em"] for x in recorded]
    assert [records[x["id"]].metadata["prompt"] for x in recorded] == [x["output"]["query"] for x in recorded]
    # the observations rebuilt from the recorded passages give back the recorded text (up to 7 stripped spaces)
    assert sum(records[x["id"]].trajectory == x["output"]["final_response"] for x in recorded) >= 993
    manifest = RunDirectory(out).read_manifest()
    assert manifest.method == "search-r1" and manifest.backend.prompt_style == "instruct"
    assert manifest.model.sha256 and manifest.retriever.kind == "replay" and manifest.finished_at
    assert RunDirectory(out).read_metrics().tasks["nq"].metrics["em"].mean == pytest.approx(0.39)


def test_resume_refuses_other_settings_and_names_them(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    execute(replay_spec(trajectories_dir, benchmarks_dir, out, subset="first:8"))
    with pytest.raises(EvalsuiteError, match="already a run directory"):
        execute(replay_spec(trajectories_dir, benchmarks_dir, out, subset="first:8"))
    with pytest.raises(EvalsuiteError, match=r"subset: the run has 'first:8', this command has 'first:9'"):
        execute(replay_spec(trajectories_dir, benchmarks_dir, out, subset="first:9", resume=True))
    other = trajectories_dir / "triviaqa_2026_04_28_17_40_search_r1_base_seed1.json"
    with pytest.raises(EvalsuiteError, match="model: the run has"):
        execute(replay_spec(trajectories_dir, benchmarks_dir, out, subset="first:8", resume=True, model=str(other)))


class FlakyReplay(ReplayBackend):
    """Replay that fails on some example ids (a backend error after its own retries)."""

    def __init__(self, model, bad: set[str]):
        super().__init__(model)
        self.bad = bad

    def _one(self, request):  # both schedules' generations come through here
        if request.key[0] in self.bad:
            return Generation(text="", finish_reason="error", error="HTTP 503 after 3 retries")
        return super()._one(request)


def test_failed_examples_are_counted_and_retried_by_resume(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    spec = replay_spec(trajectories_dir, benchmarks_dir, out, subset="first:20")
    clean = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "clean", subset="first:20"))
    bad = {clean.records[3].id, clean.records[11].id}
    first = execute(spec, backend=FlakyReplay(spec.model, bad))
    assert first.metrics.tasks["nq"].n_failed == 2
    assert {r.id for r in first.records if r.status == "failed"} == bad
    assert all(r.error == "HTTP 503 after 3 retries" for r in first.records if r.status == "failed")
    spec.resume = True
    second = execute(spec)
    assert second.metrics.tasks["nq"].n_failed == 0
    assert outcome(RunDirectory(out).read_predictions()) == outcome(clean.records)


class DyingRetriever:
    """Replay retrieval that goes away after `alive` calls."""

    def __init__(self, inner, alive: int):
        self.inner, self.alive = inner, alive

    def search(self, queries, k):
        if self.alive <= 0:
            raise ConnectionError("connection refused")
        self.alive -= 1
        return self.inner.search(queries, k)

    def info(self):
        return self.inner.info()


def test_retrieval_going_away_stops_cleanly_and_resume_finishes(tmp_path, trajectories_dir, benchmarks_dir, monkeypatch):
    import evalsuite.agent.runner as runner

    clean = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "clean", subset="first:40"))
    real = runner.load_retriever_spec
    monkeypatch.setattr(runner, "load_retriever_spec", lambda spec, backend: DyingRetriever(real(spec, backend), alive=2))
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:40", schedule="sync")
    stopped = execute(spec)
    assert stopped.stopped and "connection refused" in stopped.stopped
    assert len(stopped.records) == 16  # two batches of 8 finished before the server went away
    assert RunDirectory(spec.out).read_manifest().finished_at is None
    monkeypatch.setattr(runner, "load_retriever_spec", real)
    spec.resume = True
    execute(spec)
    assert outcome(RunDirectory(spec.out).read_predictions()) == outcome(clean.records)


def test_shards_merge_to_exactly_the_unsharded_run(tmp_path, trajectories_dir, benchmarks_dir):
    whole = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "whole", subset="first:50"))
    dirs = [tmp_path / f"shard{i}" for i in range(3)]
    for i, d in enumerate(dirs):
        execute(replay_spec(trajectories_dir, benchmarks_dir, d, subset="first:50", shard=parse_shard(f"{i}/3")))
    assert sorted(len(RunDirectory(d).read_predictions()) for d in dirs) == [16, 17, 17]
    with pytest.raises(EvalsuiteError, match="shards missing: 2/3"):
        merge_runs(dirs[:2], tmp_path / "partial")
    manifest, records, metrics = merge_runs(list(reversed(dirs)), tmp_path / "merged")
    assert [r.id for r in records] == [r.id for r in whole.records]
    assert outcome(records) == outcome(whole.records)
    assert metrics.tasks["nq"].metrics["em"] == whole.metrics.tasks["nq"].metrics["em"]
    assert manifest.subset_ids_hash == RunDirectory(tmp_path / "whole").read_manifest().subset_ids_hash


@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["sync", "async"])
def test_kill_minus_9_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path, trajectories_dir, benchmarks_dir, schedule):
    n = 80
    clean = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "clean", subset=f"first:{n}"))
    out = tmp_path / "killed"
    command = [
        sys.executable, "-m", "evalsuite", "run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING),
        "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir),
        "--subset", f"first:{n}", "--batch-size", "4", "--backend-option", "delay_s=0.05", "--schedule", schedule, "-o", str(out),
    ]
    rng = random.Random(7)

    def done_count() -> int:
        return len(RunDirectory(out).read_predictions()) if RunDirectory(out).predictions_path.exists() else 0

    def start() -> subprocess.Popen:
        args = command + (["--resume"] if RunDirectory(out).exists() else [])
        return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "120"})

    at_kill = []
    for _ in range(4):
        before = done_count()
        process = start()
        deadline = time.monotonic() + 120
        while done_count() <= before and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.3))  # a random point inside the next batches
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        at_kill.append(done_count())
    assert 0 < at_kill[0] and at_kill[-1] < n, f"the kills did not land mid-run: {at_kill}"
    process = start()
    assert process.wait(timeout=300) == 0, process.stderr.read().decode()
    records = RunDirectory(out).read_predictions()
    assert len(records) == n and len({r.id for r in records}) == n
    assert outcome(records) == outcome(clean.records)
