"""The Search-R1-compatible server (real uvicorn on 127.0.0.1) and its client: shapes, errors, fuzzing, retries."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
import time

import pytest
import requests

from evalsuite.retrieval import HttpRetriever, load_retriever
from evalsuite.retrieval.http import RetrievalError, RetrievalRequestError

QUESTION = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"


def post(server, body=None, raw: bytes | None = None):
    if raw is not None:
        return requests.post(server.url, data=raw, headers={"Content-Type": "application/json"}, timeout=30)
    return requests.post(server.url, json=body, timeout=30)


def test_plain_requests_post_gets_search_r1_shape_with_scores(server):
    response = post(server, {"queries": [QUESTION, "capital of France"], "topk": 3, "return_scores": True})
    assert response.status_code == 200
    result = response.json()["result"]
    assert len(result) == 2 and all(len(hits) == 3 for hits in result)
    for hits in result:
        for entry in hits:
            assert set(entry) == {"document", "score"}
            assert set(entry["document"]) == {"id", "contents"}
            assert isinstance(entry["score"], float)
        assert [e["score"] for e in hits] == sorted((e["score"] for e in hits), reverse=True)
    assert result[0][0]["document"]["contents"].startswith('"Kiss and Tell (1945 film)"\n')


def test_without_scores_documents_come_unwrapped(server):
    result = post(server, {"queries": [QUESTION], "topk": 2, "return_scores": False}).json()["result"]
    assert len(result[0]) == 2 and set(result[0][0]) == {"id", "contents"}
    assert post(server, {"queries": [QUESTION], "topk": 2}).json() == {"result": result}  # return_scores defaults to false


@pytest.mark.parametrize("body", [{"queries": ["Shirley Temple"]}, {"queries": ["Shirley Temple"], "topk": None}])
def test_missing_or_null_topk_uses_the_server_default(server, body):
    assert len(post(server, body).json()["result"][0]) == 3


def test_http_results_equal_in_process_results(server, full_bm25_retriever):
    queries = [QUESTION, "Shirley Temple ambassador Ghana", "Janet Waldo voice actress"]
    assert HttpRetriever(server.url).search(queries, 5) == full_bm25_retriever.search(queries, 5)


def test_a_search_r1_trainer_client_works_unchanged(server):
    # The calls Search-R1's generation.py makes (batch_search + _passages2string), verbatim in logic.
    payload = {"queries": [QUESTION], "topk": 3, "return_scores": True}
    results = requests.post(server.url, json=payload).json()["result"]
    format_reference = ""
    for idx, doc_item in enumerate(results[0]):
        content = doc_item["document"]["contents"]
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx + 1}(Title: {title}) {text}\n"
    assert format_reference.startswith('Doc 1(Title: "Kiss and Tell (1945 film)") Kiss and Tell is a 1945 American comedy film')
    assert format_reference.count("\nDoc ") == 2


@pytest.mark.parametrize(
    ("raw", "status", "error", "says"),
    [
        (b"{not json", 400, "invalid_json", "not valid JSON"),
        (b"", 400, "invalid_json", "not valid JSON"),
        (b"[" * 50_000, 400, "invalid_json", "not valid JSON"),
        (b"\xff\xfe\xfa", 400, "invalid_json", "not valid JSON"),
        (b'["q"]', 422, "invalid_request", "must be a JSON object"),
        (b"{}", 422, "invalid_request", "'queries' is required"),
        (b'{"queries": "q"}', 422, "invalid_request", "'queries' must be a list of strings, got string"),
        (b'{"queries": []}', 422, "invalid_request", "'queries' is empty"),
        (b'{"queries": ["a", 3]}', 422, "invalid_request", "queries[1] must be a string, got integer"),
        (b'{"queries": [null]}', 422, "invalid_request", "queries[0] must be a string, got null"),
        (b'{"queries": ["\\ud800"]}', 422, "invalid_request", "not valid Unicode"),
        (b'{"queries": ["a"], "topk": 0}', 422, "invalid_request", "'topk' must be at least 1, got 0"),
        (b'{"queries": ["a"], "topk": -3}', 422, "invalid_request", "at least 1"),
        (b'{"queries": ["a"], "topk": 51}', 422, "invalid_request", "at most 50"),
        (b'{"queries": ["a"], "topk": "3"}', 422, "invalid_request", "'topk' must be an integer, got string"),
        (b'{"queries": ["a"], "topk": 2.5}', 422, "invalid_request", "got number"),
        (b'{"queries": ["a"], "topk": true}', 422, "invalid_request", "got boolean"),
        (b'{"queries": ["a"], "topk": NaN}', 422, "invalid_request", "got number"),
        (b'{"queries": ["a"], "topk": 1e400}', 422, "invalid_request", "got number"),
        (b'{"queries": ["a"], "topk": 100000000000000000000000000000}', 422, "invalid_request", "at most 50"),
        (b'{"queries": ["a"], "return_scores": "yes"}', 422, "invalid_request", "'return_scores' must be true or false"),
        (b'{"queries": ["' + b"x" * 2001 + b'"]}', 422, "query_too_long", "limit is 2000"),
    ],
)
def test_bad_requests_get_a_4xx_json_error_that_says_what_is_wrong(server, raw, status, error, says):
    response = post(server, raw=raw)
    assert response.status_code == status
    body = response.json()
    assert body["error"] == error
    assert says in body["detail"]


def test_too_many_queries_in_one_call_are_refused(server):
    response = post(server, {"queries": ["q"] * 257, "topk": 3})
    assert response.status_code == 422 and response.json()["error"] == "too_many_queries"
    assert "257 queries" in response.json()["detail"] and "256" in response.json()["detail"]


def test_a_body_over_the_limit_is_refused(server):
    response = post(server, raw=b'{"queries": ["' + b"a" * (300 * 1024) + b'"]}')
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"
    chunked = requests.post(server.url, data=iter([b'{"queries": ["', b"b" * (300 * 1024), b'"]}']), timeout=30)
    assert chunked.status_code == 413


def test_unknown_paths_and_methods_are_json_4xx(server):
    assert requests.get(server.url.replace("/retrieve", "/nope")).json()["error"] == "not_found"
    response = requests.get(server.url)
    assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"


def test_health_and_info(server, full_bm25_retriever):
    base = server.url.rsplit("/", 1)[0]
    health = requests.get(base + "/health").json()
    assert health["status"] == "ok" and health["documents"] == 27761
    info = requests.get(base + "/info").json()
    assert info["index_hash"] == full_bm25_retriever.info()["index_hash"]
    assert info["server"]["default_topk"] == 3 and info["server"]["max_topk"] == 50


def malformed_requests(n: int, seed: int = 1234):
    """A fixed, seeded stream of `n` malformed request bodies covering JSON, type, range and size errors."""
    rng = random.Random(seed)

    def junk_text(size: int) -> str:
        return "".join(rng.choice(string.printable + "ü中\u2028") for _ in range(size))

    valid = {"queries": ["Shirley Temple"], "topk": 3, "return_scores": True}
    bad_values = [None, True, False, 0, -1, 1.5, "3", "", [], {}, [1], [None], ["a", 2], float("inf"), -(10**30), 10**30]
    bodies: list[bytes] = []
    kinds = ["truncated", "junk", "wrong_type", "missing", "topk", "scores", "top_level", "many", "long", "nested", "bytes", "surrogate"]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "truncated":
            text = json.dumps(valid)
            bodies.append(text[: rng.randrange(0, len(text) - 1)].encode())
        elif kind == "junk":
            bodies.append(junk_text(rng.randrange(1, 200)).encode("utf-8"))
        elif kind == "wrong_type":
            value = rng.choice([v for v in bad_values if not (isinstance(v, list) and v and all(isinstance(x, str) for x in v))])
            bodies.append(json.dumps({**valid, "queries": value}).encode())
        elif kind == "missing":
            bodies.append(json.dumps({k: v for k, v in valid.items() if k != "queries"} | {"query": ["x"]}).encode())
        elif kind == "topk":
            value = rng.choice([v for v in bad_values if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 50)])
            bodies.append(json.dumps({**valid, "topk": value}).encode())
        elif kind == "scores":
            value = rng.choice([v for v in bad_values if not isinstance(v, bool)] + ["true"])
            bodies.append(json.dumps({**valid, "return_scores": value}).encode())
        elif kind == "top_level":
            bodies.append(json.dumps(rng.choice([[], "queries", 3, None, ["Shirley Temple"], True])).encode())
        elif kind == "many":
            bodies.append(json.dumps({"queries": ["q"] * rng.randrange(257, 3000), "topk": 3}).encode())
        elif kind == "long":
            bodies.append(json.dumps({"queries": ["x" * rng.randrange(2001, 20000)], "topk": 3}).encode())
        elif kind == "nested":
            depth = rng.randrange(2000, 60000)
            bodies.append(b"[" * depth + b"]" * rng.choice([0, depth]))
        elif kind == "bytes":
            bodies.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
        else:
            bodies.append(b'{"queries": ["ok", "\\udc00\\ud800"], "topk": 3}')
    return bodies


def test_fuzz_1000_malformed_requests_all_get_4xx_and_the_server_keeps_serving(server):
    bodies = malformed_requests(1000)
    statuses: dict[int, int] = {}
    with requests.Session() as session:
        for body in bodies:
            response = session.post(server.url, data=body, headers={"Content-Type": "application/json"}, timeout=30)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert 400 <= response.status_code < 500, (response.status_code, body[:200], response.text[:200])
            assert "detail" in response.json()
    print(f"fuzz statuses: {dict(sorted(statuses.items()))}")
    assert post(server, {"queries": [QUESTION], "topk": 3, "return_scores": True}).status_code == 200


def test_client_sends_large_batches_in_chunks(server):
    client = HttpRetriever(server.url, batch_size=100)
    queries = [f"Shirley Temple film {i}" for i in range(250)]
    results = client.search(queries, 2)
    assert len(results) == 250 and client.requests_sent == 3


def test_client_raises_a_request_error_on_4xx_without_retrying(server):
    client = HttpRetriever(server.url, retries=3, backoff=0.01)
    with pytest.raises(RetrievalRequestError, match="at most 50"):
        client.search(["q"], 51)
    assert client.requests_sent == 1


def test_client_retries_connection_errors_with_backoff_then_gives_up():
    client = HttpRetriever("http://127.0.0.1:9/retrieve", retries=2, backoff=0.01, timeout=(0.5, 1.0))
    started = time.monotonic()
    with pytest.raises(RetrievalError, match="failed after 3 attempts"):
        client.search(["q"], 3)
    assert time.monotonic() - started < 10


def test_client_retries_5xx_and_succeeds(tmp_path):
    from fastapi import FastAPI
    from starlette.responses import JSONResponse

    from evalsuite.retrieval.server import ServerThread

    flaky = FastAPI()
    calls = {"n": 0}

    @flaky.post("/retrieve")
    async def retrieve():
        calls["n"] += 1
        if calls["n"] < 3:
            return JSONResponse({"detail": "warming up"}, status_code=503)
        return {"result": [[{"document": {"id": "1", "contents": '"T"\nx'}, "score": 0.5}]]}

    with ServerThread(flaky) as running:  # also a server without /info, like Search-R1's own
        client = HttpRetriever(running.url, retries=3, backoff=0.01)
        (hits,) = client.search(["q"], 1)
        assert calls["n"] == 3 and hits[0].doc_id == "1" and hits[0].title == "T" and hits[0].score == 0.5
        info = client.info()
        assert info["retriever"] == "http" and info["index_hash"].startswith("url:")


def test_load_retriever_accepts_a_url(server):
    retriever = load_retriever(server.url)
    assert isinstance(retriever, HttpRetriever)
    assert retriever.info()["retriever"] == "bm25"
    assert load_retriever(server.url.rsplit("/", 1)[0]).search(["Shirley Temple"], 1)[0][0].title == "Shirley Temple"


def test_cli_server_binds_loopback_by_default_and_answers(full_bm25):
    process = subprocess.Popen(
        [sys.executable, "-m", "evalsuite", "serve-retriever", "--index", str(full_bm25), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("evalsuite retrieval server: http://127.0.0.1:"), line + process.stderr.read()
        url = line.split()[3]
        response = requests.post(url, json={"queries": [QUESTION], "topk": 3, "return_scores": True}, timeout=30)
        assert response.status_code == 200 and len(response.json()["result"][0]) == 3
    finally:
        process.terminate()
        process.wait(timeout=30)
