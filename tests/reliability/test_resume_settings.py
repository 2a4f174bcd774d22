"""--resume and merge refuse anything that changes the results: the served model, generation options, task rows.

The attacks: an endpoint that serves model A for the first part of a run and model B for the resume (the run ended
with 30 answers of A and 70 of B under a manifest naming B); a resume with `--backend-option top_p=...`; a gold
answer edited between the kill and the resume. Each was accepted silently before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evalsuite.agent.config import RunConfig
from evalsuite.agent.merge import merge_runs
from evalsuite.agent.runner import RunSpec, execute, parse_shard
from evalsuite.errors import EvalsuiteError
from evalsuite.runs import RunDirectory

pytest.importorskip("httpx", reason="needs the [openai] extra")

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


class Endpoint(ThreadingHTTPServer):
    """A real OpenAI-compatible completions endpoint on 127.0.0.1: it answers every prompt with its model's name, and
    fails the prompts that mention a word in `failing` with HTTP 400 (so a run has failed examples to resume)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.served = "model-a"
        self.failing: set[str] = set()
        self.bodies: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: Endpoint

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": self.server.served, "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        if any(word in body["prompt"] for word in self.server.failing):
            self._send(400, {"error": "refused"})
            return
        text = f"<answer> {body['model']} </answer>"
        self._send(200, {"choices": [{"text": text, "finish_reason": "stop"}], "usage": {}})


@pytest.fixture()
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def endpoint_spec(endpoint: Endpoint, benchmarks_dir: Path, out: Path, **kw) -> RunSpec:
    base = dict(
        model=endpoint.url, backend="openai", tasks="bamboogle", out=out, data_dir=str(benchmarks_dir),
        config=RunConfig(subset="first:6", max_turns=0), backend_options={"retries": 0},
    )
    base.update(kw)
    return RunSpec(**base)


def test_resume_refuses_another_model_behind_the_same_endpoint(tmp_path, endpoint, benchmarks_dir):
    endpoint.failing = {"Citibank"}  # bamboogle test_0 fails: the run has an example to resume
    spec = endpoint_spec(endpoint, benchmarks_dir, tmp_path / "run")
    first = execute(spec)
    assert [r.status for r in first.records].count("failed") == 1
    endpoint.served, endpoint.failing = "model-b", set()  # the operator redeploys another model at the same URL
    spec.resume = True
    with pytest.raises(EvalsuiteError, match=r"model served: the run has 'model-a', this command has 'model-b'"):
        execute(spec)
    # nothing of model B was written: the finished answers are all model A's
    assert {r.prediction for r in RunDirectory(spec.out).read_predictions() if r.status == "ok"} == {"model-a"}
    endpoint.served = "model-a"
    execute(spec)
    assert {r.prediction for r in RunDirectory(spec.out).read_predictions()} == {"model-a"}


def test_resume_refuses_a_changed_or_unknown_generation_option_but_not_a_timeout(tmp_path, endpoint, benchmarks_dir):
    endpoint.failing = {"Citibank"}
    spec = endpoint_spec(endpoint, benchmarks_dir, tmp_path / "run", backend_options={"retries": 0, "top_p": 0.9})
    execute(spec)
    assert endpoint.bodies[-1]["top_p"] == 0.9  # the option reached the server: it changes the answers
    assert RunDirectory(spec.out).read_manifest().backend.options == {"top_p": 0.9}
    spec.resume = True
    for options, refused in [
        ({"top_p": 0.5}, r"backend option top_p: the run has 0.9, this command has 0.5"),
        ({}, r"backend option top_p: the run has 0.9, this command has nothing \(not set\)"),
        ({"top_p": 0.9, "repeat_penalty": 1.1}, r"backend option repeat_penalty: the run has nothing \(not set\), this command has 1.1"),
        # an option no list knows is taken to change the text: refused rather than mixed
        ({"top_p": 0.9, "my_sampler_knob": 3}, r"backend option my_sampler_knob"),
    ]:
        spec.backend_options = {"retries": 0, **options}
        with pytest.raises(EvalsuiteError, match=refused):
            execute(spec)
    # timeouts, retries and concurrency change how the run goes, not its text: accepted
    endpoint.failing = set()
    spec.backend_options = {"top_p": 0.9, "retries": 2, "timeout_s": 30.0, "concurrency": 2}
    result = execute(spec)
    assert [r.status for r in result.records] == ["ok"] * 6


def test_the_refusal_is_one_line_from_the_command_line(tmp_path, endpoint, benchmarks_dir):
    out = tmp_path / "run"
    execute(endpoint_spec(endpoint, benchmarks_dir, out))
    command = [
        sys.executable, "-m", "evalsuite", "run", "--model", endpoint.url, "--backend", "openai", "--tasks", "bamboogle",
        "--data-dir", str(benchmarks_dir), "--subset", "first:6", "--max-turns", "0", "--backend-option", "retries=0",
        "--backend-option", "temperature_jitter=0.1", "--resume", "-o", str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "1000"})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "backend option temperature_jitter: the run has nothing (not set), this command has 0.1" in done.stderr


def replay_spec(trajectories_dir: Path, data_dir: Path, out: Path, **kw) -> RunSpec:
    base = dict(
        model=str(trajectories_dir / NQ_RECORDING), backend="replay", tasks="nq", out=out, split="test_sub1000",
        data_dir=str(data_dir), retriever="replay", config=RunConfig(batch_size=8, subset="first:20"),
    )
    base.update(kw)
    return RunSpec(**base)


def _edit_gold(path: Path, line: int, gold: str) -> None:
    rows = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(rows[line])
    row["golden_answers"] = [gold]
    rows[line] = json.dumps(row)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture()
def own_data(tmp_path, benchmarks_dir) -> Path:
    """A private copy of nq's test_sub1000 split that a test may edit."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(benchmarks_dir / "nq.test_sub1000.jsonl", data)
    return data


def test_resume_refuses_task_rows_edited_since_the_run_began(tmp_path, trajectories_dir, own_data):
    spec = replay_spec(trajectories_dir, own_data, tmp_path / "run")
    execute(spec)
    manifest = RunDirectory(spec.out).read_manifest()
    assert len(manifest.data_files["nq"]["rows_sha256"]) == 64
    spec.resume = True
    _edit_gold(own_data / "nq.test_sub1000.jsonl", 500, "edited")  # a row this run does not use: the run is unchanged
    execute(spec)
    _edit_gold(own_data / "nq.test_sub1000.jsonl", 3, "edited")  # a gold answer the run scored
    with pytest.raises(EvalsuiteError, match=r"task rows nq: the run has '[0-9a-f]{64}', this command has '[0-9a-f]{64}'"):
        execute(spec)


def test_merge_refuses_shards_run_on_different_task_rows(tmp_path, trajectories_dir, own_data):
    dirs = [tmp_path / f"shard{i}" for i in range(2)]
    execute(replay_spec(trajectories_dir, own_data, dirs[0], shard=parse_shard("0/2")))
    _edit_gold(own_data / "nq.test_sub1000.jsonl", 1, "edited")  # a row of shard 1, edited before it ran
    execute(replay_spec(trajectories_dir, own_data, dirs[1], shard=parse_shard("1/2")))
    with pytest.raises(EvalsuiteError, match=r"different settings.*\n  task rows nq"):
        merge_runs(dirs, tmp_path / "merged")
