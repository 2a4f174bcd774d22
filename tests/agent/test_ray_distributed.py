"""`evalsuite run --ray`: the same run directory as a single-process run, on a real multi-node Ray cluster.

The slow tests start a head and two worker nodes with `ray start` on this machine (tests/ray_cluster.py), run the
driver as its own `evalsuite run --ray HEAD` process, and compare with `execute` in one process: the replay
backend over the 1,000 recorded NQ trajectories, llama.cpp (Gemma-3-270M) over AD-QA questions with the BM25
index served by the driver, a worker node killed mid-run, and the driver killed and resumed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.agent.config import RunConfig
from evalsuite.agent.runner import RunSpec, execute
from evalsuite.agent.resume_check import settings_differences
from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.runs import RunDirectory

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"
NO_RAY = "needs Ray: pip install 'evalsuite[ray]'"


def replay_args(trajectories_dir: Path, benchmarks_dir: Path, out: Path, subset: str, batch_size: int) -> list[str]:
    return ["run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING), "--retriever", "replay", "--tasks", "nq",
            "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--subset", subset, "--batch-size", str(batch_size), "-o", str(out)]


def replay_spec(trajectories_dir: Path, benchmarks_dir: Path, out: Path, subset: str, batch_size: int) -> RunSpec:
    return RunSpec(model=str(trajectories_dir / NQ_RECORDING), backend="replay", tasks="nq", out=out, split="test_sub1000",
                   data_dir=str(benchmarks_dir), retriever="replay", config=RunConfig(subset=subset, batch_size=batch_size))


def outcome(records):
    """What must be identical between runs (timings aside), in file order."""
    return [((r.task, r.id), r.prediction, r.trajectory, r.stop_reason, r.status, r.metrics, r.turns and [t.passages for t in r.turns]) for r in records]


def assert_same_run(ray_out: Path, single_out: Path) -> None:
    """The Ray run's directory holds what the single-process run's holds: records in the same order, the same
    metrics, and a manifest with the same settings."""
    ray_run, single = RunDirectory(ray_out), RunDirectory(single_out)
    assert {p.name for p in ray_out.iterdir()} == {p.name for p in single_out.iterdir()}  # one RunDirectory wrote both
    ray_records = ray_run.read_predictions()
    assert len({(r.task, r.id) for r in ray_records}) == len(ray_records)
    assert outcome(ray_records) == outcome(single.read_predictions())
    assert ray_run.read_metrics() == single.read_metrics()
    assert settings_differences(single.read_manifest(), ray_run.read_manifest()) == []
    assert ray_run.read_manifest().finished_at


# ---- bad input (default test run: no cluster is started) ----

def test_ray_without_the_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as it does without the package
    result = CliRunner().invoke(app, ["run", "--backend", "replay", "--model", "rec.json", "--tasks", "nq", "--retriever", "none", "-o", str(tmp_path / "run"), "--ray", "local"])
    assert isinstance(result.exception, EvalsuiteError)  # printed by the CLI's entry point as one line and its hint
    assert "needs the Python package 'ray'" in result.exception.message and result.exception.hint == 'pip install "evalsuite[ray]"'
    assert not (tmp_path / "run").exists()


def test_a_ray_address_that_does_not_answer_is_one_line_and_writes_nothing(tmp_path, trajectories_dir, benchmarks_dir):
    pytest.importorskip("ray", reason=NO_RAY)
    import socket

    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "run"
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "evalsuite", *replay_args(trajectories_dir, benchmarks_dir, out, "first:4", 4), "--ray", f"127.0.0.1:{port}"],
                            capture_output=True, text=True, check=False, timeout=120, env={**os.environ, "COLUMNS": "300"})
    assert result.returncode == 2, result.stderr
    # (after the progress lines that name each stage: stderr is a log here, not a terminal)
    error = result.stderr[result.stderr.index("error:"):]
    assert error.startswith(f"error: no Ray cluster answers at 127.0.0.1:{port} (Connection refused)\n  hint: start its head with `ray start --head")
    assert len(error.splitlines()) == 2 and not out.exists()
    assert time.monotonic() - started < 60  # refused at once, not after ray.init's minutes of retries


@pytest.mark.parametrize("address", ["nohost", "host:port"])
def test_a_malformed_ray_address_says_what_to_pass(address):
    pytest.importorskip("ray", reason=NO_RAY)
    from evalsuite.agent.distributed import RayOptions, connect

    with pytest.raises(EvalsuiteError, match="is not a Ray address") as caught:
        connect(None, RayOptions(address=address))
    assert "--ray HEAD_IP:PORT" in caught.value.hint


def test_ray_with_a_schedule_the_backend_cannot_run_is_one_line_before_ray_starts(tmp_path, trajectories_dir, benchmarks_dir):
    pytest.importorskip("ray", reason=NO_RAY)
    out = tmp_path / "run"
    args = ["run", "--backend", "llamacpp", "--model", str(tmp_path / "model.gguf"), "--tasks", "nq", "--split", "test_sub1000",
            "--data-dir", str(benchmarks_dir), "--schedule", "async", "-o", str(out), "--ray", "127.0.0.1:1"]
    result = subprocess.run([sys.executable, "-m", "evalsuite", *args], capture_output=True, text=True, check=False, timeout=120,
                            env={**os.environ, "COLUMNS": "300"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: the llamacpp backend does not support --schedule async")  # not "no Ray cluster answers"
    assert not out.exists()


@pytest.mark.parametrize("schedule", ["async", "sync"])
def test_an_actor_plays_its_batch_on_the_run_schedule_with_the_single_process_records(tmp_path, trajectories_dir, benchmarks_dir, schedule):
    """The actor's body in this process (Ray only wraps it): 40 NQ questions as one batch on either schedule give the
    records a single-process run writes."""
    from evalsuite.agent.distributed import EvaluationWorker
    from evalsuite.agent.runner import load_examples, owed_trajectories

    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "single", "first:40", 40)
    single = execute(spec)
    worker = EvaluationWorker(spec, "replay", schedule)
    assert worker.load_error is None and worker.schedule == schedule
    examples, _ = load_examples(spec)
    outcome_of_batch = worker.run(owed_trajectories(spec.config, examples, []))
    assert outcome_of_batch.stopped is None and outcome_of_batch.error is None
    assert outcome(outcome_of_batch.records) == outcome(single.records)


def test_an_actor_that_reads_the_settings_otherwise_stops_the_run_naming_them():
    """A node with another evalsuite would drop a setting it does not know (or read one otherwise): refused."""
    from evalsuite.agent.distributed import actor_refusal

    ours = RunConfig(samples=2, temperature=0.7).model_dump(mode="json")
    assert actor_refusal({"settings": ours, "backend": {}, "style": "base", "retriever": {}}, ours) is None
    older = {k: v for k, v in ours.items() if k != "seeds"}  # its RunConfig has no --seeds
    refused = actor_refusal({"settings": {**older, "temperature": 0.5}, "backend": {}}, ours)
    assert refused.message == ("a Ray actor reads the run's settings otherwise than this driver (seeds, temperature): "
                               "its node runs another evalsuite")
    assert refused.hint == "install the same evalsuite on every node of the cluster"
    assert actor_refusal({"error": "no such file"}, ours).message == "a Ray actor could not load the model: no such file"


def test_actor_count_fits_the_cluster_or_says_what_to_change():
    from evalsuite.agent.distributed import RayOptions, actor_count

    assert actor_count({"CPU": 5.0}, RayOptions()) == 5
    assert actor_count({"CPU": 5.0}, RayOptions(num_cpus=2)) == 2
    assert actor_count({"CPU": 64.0, "GPU": 8.0}, RayOptions(num_gpus=2)) == 4  # vLLM with tensor_parallel_size=2
    assert actor_count({"CPU": 64.0, "GPU": 8.0}, RayOptions(num_gpus=1, actors=3)) == 3
    with pytest.raises(EvalsuiteError, match=r"has 4 CPUs and 0 GPUs: no room for 1 actor\(s\) of 1 CPUs and 1 GPUs") as caught:
        actor_count({"CPU": 4.0}, RayOptions(num_gpus=1))
    assert "--ray-gpus-per-actor" in caught.value.hint
    with pytest.raises(EvalsuiteError, match="no room for 3 actor"):
        actor_count({"CPU": 2.0}, RayOptions(actors=3))
    with pytest.raises(EvalsuiteError, match="--ray-actors 0 is out of range"):
        RayOptions(actors=0)


# ---- a real cluster: a head and two worker nodes (slow) ----

@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("ray", reason=NO_RAY)
    from ray_cluster import start_cluster

    # a token file left in ~/.ray by some earlier `ray.init()` would switch on token auth for the test cluster only
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "disabled")
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])))
        cluster = start_cluster(workers=2, cpus_per_worker=1)
        try:
            yield cluster
        finally:
            cluster.stop()


def driver(args: list[str], log: Path) -> subprocess.Popen:
    """`evalsuite run ... --ray HEAD` as its own process (the driver), its output in `log`."""
    with log.open("w") as handle:
        return subprocess.Popen([sys.executable, "-m", "evalsuite", *args], stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "150"})


def finish(process: subprocess.Popen, log: Path, timeout: float = 900) -> None:
    assert process.wait(timeout=timeout) == 0, log.read_text()[-3000:]


def complete_lines(path: Path) -> list[str]:
    """The whole JSON lines of predictions.jsonl (a killed writer may leave a torn last line)."""
    if not path.exists():
        return []
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.endswith("\n"):
            try:
                json.loads(line)
            except ValueError:
                continue
            lines.append(line)
    return lines


def wait_for_records(path: Path, at_least: int, process: subprocess.Popen, log: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while len(complete_lines(path)) < at_least:
        assert process.poll() is None, f"the driver ended before {at_least} records: {log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, f"no {at_least} records after {timeout:g} s"
        time.sleep(0.2)


@pytest.mark.slow
def test_replay_of_1000_nq_questions_on_the_cluster_equals_the_single_process_run(cluster, tmp_path, trajectories_dir, benchmarks_dir):
    single = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "single", "full", 32))
    assert len(single.records) == 1000
    log = tmp_path / "driver.log"
    finish(driver([*replay_args(trajectories_dir, benchmarks_dir, tmp_path / "ray", "full", 32), "--ray", cluster.address], log), log)
    assert_same_run(tmp_path / "ray", tmp_path / "single")


@pytest.mark.slow
def test_llamacpp_with_the_served_bm25_index_equals_the_single_process_run(cluster, tmp_path, benchmarks_dir):
    from evalsuite.agent.default import demo_index_dir, demo_model_path

    common = ["run", "--backend", "llamacpp", "--model", demo_model_path(), "--tasks", "adqa", "--subset", "first:4",
              "--retriever", str(demo_index_dir()), "--prompt-style", "base-fewshot", "--max-tokens", "64", "--max-turns", "2",
              "--batch-size", "1", "--backend-option", "n_threads=1", "--allow-failures"]
    single = CliRunner().invoke(app, [*common, "-o", str(tmp_path / "single")])
    assert single.exit_code == 0, single.output
    log = tmp_path / "driver.log"
    finish(driver([*common, "-o", str(tmp_path / "ray"), "--ray", cluster.address, "--ray-actors", "2"], log), log)
    assert_same_run(tmp_path / "ray", tmp_path / "single")
    records = RunDirectory(tmp_path / "ray").read_predictions()
    assert any(turn.passages for record in records for turn in record.turns)  # the served index answered searches


@pytest.mark.slow
def test_an_actor_that_cannot_load_the_model_is_one_line_and_writes_nothing(cluster, tmp_path, trajectories_dir, benchmarks_dir):
    missing = tmp_path / "missing.json"  # a recording the actors cannot read
    args = replay_args(trajectories_dir, benchmarks_dir, tmp_path / "ray", "first:8", 4)
    args[args.index("--model") + 1] = str(missing)
    result = subprocess.run([sys.executable, "-m", "evalsuite", *args, "--ray", cluster.address], capture_output=True, text=True, check=False,
                            timeout=600, env={**os.environ, "COLUMNS": "300"})
    assert result.returncode == 2, result.stderr
    assert f"error: a Ray actor could not load the model: recording {missing} does not exist" in result.stderr
    assert "model must be readable on every node" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "ray").exists()


SLOW_N, SLOW_BATCH = 96, 4


def slow_replay_on_cluster(cluster, tmp_path: Path, trajectories_dir: Path, benchmarks_dir: Path, wait_for: int):
    """A replay run slowed to 0.1 s per model call, driven on the cluster until `wait_for` records are written;
    returns its arguments, its driver process and the records of the same run uninterrupted in one process."""
    subset = f"first:{SLOW_N}"
    clean = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "clean", subset, SLOW_BATCH)).records
    out, log = tmp_path / "ray", tmp_path / "driver.log"
    args = [*replay_args(trajectories_dir, benchmarks_dir, out, subset, SLOW_BATCH), "--backend-option", "delay_s=0.1", "--ray", cluster.address]
    process = driver(args, log)
    wait_for_records(out / "predictions.jsonl", wait_for, process, log)
    return args, process, clean


def assert_every_example_once(out: Path, clean) -> None:
    records = RunDirectory(out).read_predictions()
    assert len(records) == SLOW_N and len({r.id for r in records}) == SLOW_N
    assert outcome(records) == outcome(clean)


@pytest.mark.slow
def test_a_worker_node_killed_mid_run_loses_nothing(cluster, tmp_path, trajectories_dir, benchmarks_dir):
    _, process, clean = slow_replay_on_cluster(cluster, tmp_path, trajectories_dir, benchmarks_dir, 2 * SLOW_BATCH)
    cluster.kill_worker(cluster.workers[0])  # its raylet, its worker processes and the actor on it
    done_at_kill = len(complete_lines(tmp_path / "ray" / "predictions.jsonl"))
    try:
        finish(process, tmp_path / "driver.log")
    finally:
        cluster.wait_for_killed_nodes()
        cluster.add_worker(1)  # back to two worker nodes for the next test
    assert done_at_kill < SLOW_N, "the node was killed after the run had finished"
    assert "died" in (log := (tmp_path / "driver.log").read_text()) and "its batches go to the 1 others" in log, log[-2000:]
    assert_every_example_once(tmp_path / "ray", clean)


@pytest.mark.slow
def test_the_driver_killed_and_resumed_redoes_nothing_finished(cluster, tmp_path, trajectories_dir, benchmarks_dir):
    args, process, clean = slow_replay_on_cluster(cluster, tmp_path, trajectories_dir, benchmarks_dir, 3 * SLOW_BATCH)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    out = tmp_path / "ray"
    finished = complete_lines(out / "predictions.jsonl")
    assert 0 < len(finished) < SLOW_N, f"the kill did not land mid-run: {len(finished)} of {SLOW_N} records"
    assert RunDirectory(out).read_manifest().finished_at is None
    finish(driver([*args, "--resume"], tmp_path / "resumed.log"), tmp_path / "resumed.log")
    final = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    # every record finished before the kill is there byte for byte (its timings included): none was played again
    assert set(finished) <= set(final)
    assert_every_example_once(out, clean)
