"""Fixtures for the reliability tests: a small real BM25 index served by the real retrieval server on 127.0.0.1,
and a real llama.cpp model server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import TOPICS, write_jsonl
from tests.conftest import skip_without_extra


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real BM25 index over eight passages in the wiki-18 shape."""
    from evalsuite.retrieval import build_index

    root = tmp_path_factory.mktemp("reliability_index")
    corpus = write_jsonl(root / "corpus.jsonl", [{"id": str(i), "contents": f'"{title}"\n{text}'} for i, (title, text) in enumerate(TOPICS)])
    return build_index(corpus, root / "bm25")


@pytest.fixture(scope="session")
def retrieval_server(tiny_index: Path) -> Iterator[str]:
    """`evalsuite`'s retrieval server (uvicorn, default limits: 8,192-character queries) on 127.0.0.1; its /retrieve URL."""
    from evalsuite.retrieval import load_retriever
    from evalsuite.retrieval.server import ServerThread, create_app

    with ServerThread(create_app(load_retriever(tiny_index), default_topk=3)) as running:
        yield running.url


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real OpenAI-compatible server: llama.cpp serving SmolLM2-135M-Instruct on 127.0.0.1; its /v1 URL."""
    skip_without_extra("llamacpp", "llama_cpp")  # the server
    skip_without_extra("openai", "openai")  # the backend the tests talk to it with
    from llama_servers import llama_server, smollm2_gguf

    log = tmp_path_factory.mktemp("model_server") / "server.log"
    # One thread: on a busy 2-core machine, two llama.cpp threads spin against the tests' own processes (30x slower).
    with llama_server(str(smollm2_gguf()), log, n_threads=1, n_ctx=512) as url:
        yield url
