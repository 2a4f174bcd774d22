"""A real llama.cpp OpenAI-compatible server with SmolLM2-135M-Instruct, started once per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fault_proxy import FaultProxy
from llama_servers import llama_server, smollm2_gguf
from tests.conftest import skip_without_extra


@pytest.fixture(scope="session")
def judge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a llama_cpp.server on 127.0.0.1 (one model; any model name in a request is served by it)."""
    skip_without_extra("llamacpp", "llama_cpp")
    log = tmp_path_factory.mktemp("judge_server") / "server.log"
    # One thread: on a busy 2-core machine, two llama.cpp threads spin against the tests' own processes (30x slower).
    with llama_server(str(smollm2_gguf()), log, n_threads=1, n_ctx=2048) as url:
        yield url.removesuffix("/v1")


@pytest.fixture()
def counting_proxy(judge_server: str) -> Iterator[FaultProxy]:
    """A fault-free proxy that counts every request reaching the judge server."""
    proxy = FaultProxy(judge_server).start()
    yield proxy
    proxy.stop()
