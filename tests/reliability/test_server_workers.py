"""Several server processes share one listening socket and one memory-mapped BM25 index; /info says which."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from evalsuite.retrieval import build_index

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, shared_data) -> Path:
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    with (shared_data / "corpus" / "multihop_contexts.jsonl").open("rb") as handle:
        corpus.write_bytes(b"".join(line for _, line in zip(range(500), handle)))
    return build_index(corpus, tmp_path_factory.mktemp("idx") / "bm25")


def test_two_workers_share_the_memory_mapped_index(index_dir):
    server = subprocess.Popen(
        [sys.executable, "-m", "evalsuite", "serve-retriever", "--index", str(index_dir), "--port", "0", "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,  # the workers are in this process group, stopped together below
    )
    try:
        line = server.stdout.readline()
        assert "2 worker processes" in line, line
        url = line.split()[3]
        info_url = url.replace("/retrieve", "/info")
        pids: set[int] = set()
        deadline = time.monotonic() + 120
        while len(pids) < 2 and time.monotonic() < deadline:
            try:
                info = requests.get(info_url, timeout=10, headers={"Connection": "close"}).json()
            except requests.ConnectionError:
                time.sleep(0.2)  # workers still starting
                continue
            assert info["server"]["workers"] == 2 and info["server"]["index_memory_mapped"] is True
            pids.add(info["server"]["worker_pid"])
        assert len(pids) == 2, f"only saw workers {pids}"
        for pid in pids:  # both processes map the same score array file: one copy in the page cache
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert str(index_dir / "bm25" / "data.csc.index.npy") in maps
        answers = {
            tuple(doc["id"] for doc in requests.post(url, json={"queries": ["Shirley Temple"], "topk": 3}, headers={"Connection": "close"}, timeout=30).json()["result"][0])
            for _ in range(6)
        }
        assert len(answers) == 1
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
