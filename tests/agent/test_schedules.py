"""The asynchronous schedule against the turn-synchronous reference, with the replay backend over the 1,000 recorded
NQ Search-R1 trajectories: the same records byte for byte, searches still batched, records written as trajectories
finish, a stop when retrieval goes away with everything finished kept, and a backend that cannot run it refused in
one line before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import evalsuite.agent.runner as runner
from evalsuite.agent.runner import RunSpec, execute
from tests.agent.test_run_directory import replay_spec as run_directory_spec
from evalsuite.errors import EvalsuiteError
from evalsuite.runs import RunDirectory

TIMINGS = {"latency_s", "retrieval_latency_s"}


def replay_spec(trajectories_dir: Path, benchmarks_dir: Path, out: Path, **kw) -> RunSpec:
    return run_directory_spec(trajectories_dir, benchmarks_dir, out, **{"batch_size": 64, **kw})


def content(records) -> dict:
    """Every field of every record except the timings, keyed by example."""
    return {
        (r.task, r.id): r.model_dump(mode="json", exclude={"turns"}) | {"turns": [t.model_dump(mode="json", exclude=TIMINGS) for t in r.turns]}
        for r in records
    }


class CountingRetriever:
    """The run's own retriever, recording the size of each retrieval call (optionally failing after `alive` calls)."""

    def __init__(self, inner, alive: int | None = None):
        self.inner, self.alive, self.calls = inner, alive, []

    def search(self, queries, k):
        if self.alive is not None and len(self.calls) >= self.alive:
            raise ConnectionError("connection refused")
        self.calls.append(len(queries))
        return self.inner.search(queries, k)

    def info(self):
        return self.inner.info()


@pytest.fixture()
def counted(monkeypatch):
    """Wrap the retriever of every run in this test in a CountingRetriever; returns the wrappers made."""
    made: list[CountingRetriever] = []
    real = runner.load_retriever_spec

    def load(spec, backend, alive=None):
        made.append(CountingRetriever(real(spec, backend), alive))
        return made[-1]

    monkeypatch.setattr(runner, "load_retriever_spec", load)
    return made


def test_async_replay_of_1000_recorded_trajectories_equals_the_turn_synchronous_run(tmp_path, trajectories_dir, benchmarks_dir, counted):
    sync = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "sync", schedule="sync"))
    ran_async = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "async", schedule="async"))
    assert len(sync.records) == len(ran_async.records) == 1000
    assert content(ran_async.records) == content(sync.records)
    assert [r.id for r in ran_async.records] == [r.id for r in sync.records]  # handed back in input order
    assert ran_async.metrics == sync.metrics
    # written as they finished, then put in example order once the run completed: the same file as the sync run's
    written = RunDirectory(tmp_path / "async").read_predictions()
    assert content(written) == content(sync.records)
    assert [r.id for r in written] == [r.id for r in RunDirectory(tmp_path / "sync").read_predictions()] == [r.id for r in sync.records]
    manifests = [RunDirectory(tmp_path / name).read_manifest() for name in ("sync", "async")]
    assert [m.backend.schedule for m in manifests] == ["sync", "async"] and all(m.finished_at for m in manifests)
    # the retrieval calls still carry batches: the same searches, in far fewer calls than one per search
    sync_calls, async_calls = counted[0].calls, counted[1].calls
    assert sum(async_calls) == sum(sync_calls) > 900
    assert len(async_calls) < sum(async_calls) / 8, async_calls


def test_the_default_schedule_is_async_where_the_backend_supports_it(tmp_path, trajectories_dir, benchmarks_dir):
    execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:4"))
    assert RunDirectory(tmp_path / "run").read_manifest().backend.schedule == "async"


def test_a_resume_may_change_the_schedule(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:30", schedule="sync")
    whole = execute(spec)
    RunDirectory(spec.out).rewrite_predictions(RunDirectory(spec.out).read_predictions()[:10])  # as if killed after 10
    spec.resume, spec.config = True, spec.config.replace(schedule="async")
    resumed = execute(spec)
    assert len(resumed.records) == 30 and content(resumed.records) == content(whole.records)
    assert RunDirectory(spec.out).read_manifest().backend.schedule == "async"


def test_retrieval_going_away_stops_the_async_run_with_finished_records_kept(tmp_path, trajectories_dir, benchmarks_dir, monkeypatch):
    clean = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "clean", subset="first:40", schedule="sync"))
    real = runner.load_retriever_spec
    monkeypatch.setattr(runner, "load_retriever_spec", lambda spec, backend: CountingRetriever(real(spec, backend), alive=2))
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:40", schedule="async", batch_size=8)
    stopped = execute(spec)
    assert stopped.stopped and "connection refused" in stopped.stopped
    on_disk = RunDirectory(spec.out).read_predictions()
    assert 0 < len(on_disk) < 40 and content(on_disk).items() <= content(clean.records).items()
    assert RunDirectory(spec.out).read_manifest().finished_at is None
    monkeypatch.setattr(runner, "load_retriever_spec", real)
    spec.resume = True
    execute(spec)
    assert content(RunDirectory(spec.out).read_predictions()) == content(clean.records)


def test_async_with_a_batch_only_backend_is_one_line_and_writes_nothing(tmp_path, benchmarks_dir):
    result = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--backend", "llamacpp", "--model", str(tmp_path / "model.gguf"), "--tasks", "nq",
         "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--schedule", "async", "-o", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "the llamacpp backend does not support --schedule async" in line and "hint: use --schedule sync" in result.stderr
    assert not (tmp_path / "run").exists()


def test_an_unknown_schedule_is_refused_before_anything_is_written(tmp_path, trajectories_dir, benchmarks_dir):
    with pytest.raises(EvalsuiteError, match="unknown schedule 'sometimes'"):
        execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", schedule="sometimes"))
    assert not (tmp_path / "run").exists()


def test_a_batch_backend_asked_for_one_async_generation_says_which_schedule_to_use():
    import asyncio

    from evalsuite.models.base import Backend, GenerationRequest, ScheduleUnsupported

    class BatchOnly(Backend):
        name = "batch-only"

        def generate(self, requests):
            return []

    with pytest.raises(ScheduleUnsupported, match="batch-only backend does not support --schedule async"):
        asyncio.run(BatchOnly().agenerate(GenerationRequest(prompt="q", max_tokens=1)))
