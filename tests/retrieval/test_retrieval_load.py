"""Load: concurrent clients against the real server in its own process; zero errors, latency percentiles printed."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import requests

from evalsuite.retrieval import HttpRetriever


@pytest.fixture(scope="module")
def server_process(full_bm25):
    process = subprocess.Popen(
        [sys.executable, "-m", "evalsuite", "serve-retriever", "--index", str(full_bm25), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()
    url = line.split()[3]
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(url.replace("/retrieve", "/health"), timeout=5).raise_for_status()
            break
        except requests.RequestException:
            if time.monotonic() > deadline:
                process.kill()
                raise
            time.sleep(0.1)
    yield url
    process.terminate()
    process.wait(timeout=30)


def run_load(url: str, questions: list[str], clients: int, total: int) -> dict:
    """`clients` threads, each with its own client, send `total` single-query requests; returns latencies and errors."""
    per_client = [[questions[(c * 7919 + i) % len(questions)] for i in range(c, total, clients)] for c in range(clients)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def worker(queries: list[str]) -> None:
        client = HttpRetriever(url, retries=0, timeout=(5, 60))
        mine: list[float] = []
        for query in queries:
            started = time.perf_counter()
            try:
                (hits,) = client.search([query], 3)
                if len(hits) > 3:
                    raise AssertionError("more than k hits")
            except Exception as exc:  # every failure counts
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(queries,)) for queries in per_client]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    report = {"requests": total, "ok": len(latencies), "errors": len(errors), "seconds": elapsed, "qps": total / elapsed, "p50_ms": pct(0.50), "p99_ms": pct(0.99)}
    print(
        f"\nload: {clients} clients, {total} queries in {elapsed:.1f} s ({report['qps']:.0f} q/s), errors {len(errors)},"
        f" latency p50 {report['p50_ms']:.1f} ms, p99 {report['p99_ms']:.1f} ms"
    )
    report["first_errors"] = errors[:5]
    return report


def test_16_clients_short_load_has_no_errors(server_process, hotpot_rows):
    report = run_load(server_process, [r["question"] for r in hotpot_rows], clients=16, total=800)
    assert report["errors"] == 0, report["first_errors"]
    assert report["ok"] == 800


@pytest.mark.slow
def test_16_clients_10000_queries_zero_errors(server_process, hotpot_rows):
    report = run_load(server_process, [r["question"] for r in hotpot_rows], clients=16, total=10_000)
    assert report["errors"] == 0, report["first_errors"]
    assert report["ok"] == 10_000
    health = requests.get(server_process.replace("/retrieve", "/health")).json()
    assert health["status"] == "ok"
