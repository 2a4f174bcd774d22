"""Slow: the server answers a Search-R1 training batch (512 prompts x 5 rollouts = 2,560 queries) over a 2 M-passage
BM25 index in one request, with the answers the index gives in-process.

    python -m pytest tests/retrieval/test_retrieval_scale.py -m slow -s
    EVALSUITE_SCALE_INDEX=DIR ...       # reuse an index built by benchmarks/retrieval_scale.py --keep
    EVALSUITE_SCALE_PASSAGES=250000 ... # a smaller derived corpus
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from evalsuite.retrieval import build_index, load_retriever

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
BATCH = 512 * 5


def scale_benchmark():
    spec = importlib.util.spec_from_file_location("retrieval_scale", REPO / "benchmarks" / "retrieval_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scale_index(tmp_path_factory, shared_data) -> Path:
    if os.environ.get("EVALSUITE_SCALE_INDEX"):
        return Path(os.environ["EVALSUITE_SCALE_INDEX"])
    bench = scale_benchmark()
    n = int(os.environ.get("EVALSUITE_SCALE_PASSAGES", "2000000"))
    work = tmp_path_factory.mktemp("scale")
    corpus = bench.derive_corpus(bench.source_passages(shared_data / "corpus"), n, work / f"derived-{n}.jsonl")
    return build_index(corpus, work / "bm25")


def test_a_training_batch_of_2560_queries_in_one_request(scale_index, hotpot_rows):
    questions = [row["question"] for row in hotpot_rows]
    queries = [questions[i % len(questions)] for i in range(BATCH)]
    server = subprocess.Popen(
        [sys.executable, "-m", "evalsuite", "serve-retriever", "--index", str(scale_index), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        url = server.stdout.readline().split()[3]
        started = time.perf_counter()
        response = requests.post(url, json={"queries": queries, "topk": 3, "return_scores": True}, timeout=1800)
        latency = time.perf_counter() - started
        assert response.status_code == 200, response.text[:300]
        result = response.json()["result"]
    finally:
        server.terminate()
        server.wait(timeout=60)
    documents = json.loads((scale_index / "index.json").read_text())["corpus"]["num_documents"]
    print(f"\n{BATCH} queries over {documents:,} passages in one request: {latency:.1f} s ({BATCH / latency:.0f} q/s)")
    assert len(result) == BATCH and all(len(hits) == 3 for hits in result)
    sample = list(range(0, BATCH, 97))
    expected = load_retriever(scale_index).search([queries[i] for i in sample], 3)
    assert [[hit["document"]["id"] for hit in result[i]] for i in sample] == [[hit.doc_id for hit in hits] for hits in expected]
