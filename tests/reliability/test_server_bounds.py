"""The retrieval server bounds slow and heavy clients: header and body deadlines, a cap on query characters per
request, no global lock held across a whole batch, and /info without absolute paths; worker processes share one
memory-mapped index."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from evalsuite.retrieval import build_index, load_retriever
from evalsuite.retrieval.server import ServerLimits, ServerThread, create_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, shared_data) -> Path:
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    with (shared_data / "corpus" / "multihop_contexts.jsonl").open("rb") as handle:
        corpus.write_bytes(b"".join(line for _, line in zip(range(2000), handle)))
    return build_index(corpus, tmp_path_factory.mktemp("idx") / "bm25")


@pytest.fixture(scope="module")
def retriever(index_dir):
    return load_retriever(index_dir)


def serve(retriever, **limits) -> ServerThread:
    limits = ServerLimits(**limits)
    return ServerThread(create_app(retriever, limits=limits), limits=limits)


def strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value


def test_info_shows_no_absolute_path(retriever, index_dir):
    with serve(retriever) as server:
        info = requests.get(server.url.replace("/retrieve", "/info"), timeout=30).json()
    assert retriever.info()["corpus"]["path"].startswith("/")  # the manifest has it ...
    assert not [s for s in strings(info) if os.path.isabs(s) or str(index_dir) in s or str(index_dir.parent) in s]  # ... /info not
    assert info["corpus"]["path"] == "corpus.jsonl" and info["index_hash"] == retriever.info()["index_hash"]
    assert info["server"]["workers"] == 1 and info["server"]["index_memory_mapped"] is True


def test_total_query_characters_per_request_are_capped(retriever):
    with serve(retriever, max_request_chars=1000) as server:
        refused = requests.post(server.url, json={"queries": ["x" * 600, "y" * 600], "topk": 1}, timeout=30)
        assert refused.status_code == 413
        assert refused.json()["error"] == "request_too_large" and "1000 characters" in refused.json()["detail"]
        assert requests.post(server.url, json={"queries": ["Shirley Temple " * 30] * 2, "topk": 1}, timeout=30).status_code == 200


def test_a_heavy_request_does_not_hold_back_a_light_one(retriever):
    """A batch of long queries no longer holds a lock that every other request waits for."""
    heavy = {"queries": [f"film director actress radio program {i} " * 12 for i in range(3000)], "topk": 3}
    finished: dict[str, float] = {}
    with serve(retriever, max_request_chars=2_000_000) as server:

        def send_heavy():
            requests.post(server.url, json=heavy, timeout=300).raise_for_status()
            finished["heavy"] = time.monotonic()

        thread = threading.Thread(target=send_heavy)
        thread.start()
        time.sleep(0.5)  # the heavy batch is being searched
        assert requests.post(server.url, json={"queries": ["Shirley Temple"], "topk": 1}, timeout=300).status_code == 200
        finished["light"] = time.monotonic()
        thread.join()
    assert finished["light"] < finished["heavy"]


def test_trickled_headers_are_cut_off_at_the_header_deadline(retriever):
    with serve(retriever, header_timeout_s=0.5) as server:
        sock = socket.create_connection((server.host, server.port), timeout=10)
        sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")
        closed = False
        for _ in range(100):  # one header byte every 0.05 s would keep the connection forever without a deadline
            try:
                sock.sendall(b"X")
                sock.settimeout(0.05)
                if sock.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
        sock.close()
        assert closed, "the server kept a connection whose headers never finished"
        assert requests.get(server.url.replace("/retrieve", "/health"), timeout=10).status_code == 200


def test_a_body_that_never_arrives_gets_408(retriever):
    with serve(retriever, body_timeout_s=0.5) as server:
        sock = socket.create_connection((server.host, server.port), timeout=30)
        sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"queries\"")
        response = b""
        while b"\r\n\r\n" not in response or not response.rstrip().endswith(b"}"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            response += chunk
        sock.close()
    assert response.startswith(b"HTTP/1.1 408")
    assert json.loads(response.split(b"\r\n\r\n", 1)[1])["error"] == "body_timeout"


def test_slowloris_connections_do_not_lock_out_new_clients(index_dir):
    """More half-sent requests than the server has file descriptors (the 1,100-connection attack, scaled to a server
    limited to 128 descriptors): a normal client is still answered once the header deadline cuts them off."""
    command = f"ulimit -n 128 && exec {shlex.quote(sys.executable)} -m evalsuite serve-retriever --index {shlex.quote(str(index_dir))} --port 0 --header-timeout 1"
    server = subprocess.Popen(
        ["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    attackers: list[socket.socket] = []
    try:
        url = server.stdout.readline().split()[3]
        host, port = url.split("/")[2].split(":")
        for _ in range(160):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")
            attackers.append(sock)
        stop = threading.Event()

        def trickle():
            while not stop.is_set():
                for sock in attackers:
                    try:
                        sock.sendall(b"X")
                    except OSError:
                        pass
                time.sleep(0.2)

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        try:
            response = requests.post(url, json={"queries": ["Shirley Temple"], "topk": 1}, timeout=(10, 20))
        finally:
            stop.set()
            thread.join()
        assert response.status_code == 200 and len(response.json()["result"]) == 1
    finally:
        for sock in attackers:
            sock.close()
        server.terminate()
        server.wait(timeout=30)


def test_two_workers_share_the_memory_mapped_index(index_dir):
    """Several server processes share one listening socket and one memory-mapped BM25 index; /info says which."""
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
