"""Client of a Search-R1-compatible retrieval server (`POST /retrieve`): batched, pooled, retried under a deadline.

Works against `evalsuite serve-retriever` and against Search-R1's own `retrieval_server.py` (which has no `/info`;
`info()` then describes the URL instead of an index).
"""

from __future__ import annotations

import hashlib
import math
import threading
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from evalsuite.errors import EvalsuiteError, RequestRejected
from evalsuite.retrieval.types import Hit, check_k, join_contents
from evalsuite.retry import (
    Attempt,
    CallFailed,
    RetryableStatus,
    RetryPolicy,
    call,
    retry_after_seconds,
    retryable_status,
)


class RetrievalError(EvalsuiteError):
    """The retrieval server could not be reached, kept failing until the deadline, or sent a malformed answer."""


class RetrievalRequestError(RequestRejected):
    """The retrieval server rejected a request (4xx); retrying the same request cannot help."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(f"retrieval server answered {status}: {message}")


def _split_url(url: str) -> tuple[str, str]:
    """(base URL, /retrieve URL) from either form."""
    url = url.rstrip("/")
    if url.endswith("/retrieve"):
        return url[: -len("/retrieve")], url
    return url, url + "/retrieve"


class HttpRetriever:
    """The `Retriever` interface over HTTP.

    Queries are sent in batches of at most `batch_size` per request over pooled keep-alive connections (one
    session per thread). Each request follows `evalsuite.retry`: connection errors, timeouts and 429/5xx answers are
    retried (at most `retries` times) with exponential backoff and jitter, all within `deadline_s`; other 4xx answers
    raise `RetrievalRequestError` at once.
    """

    kind = "http"

    def __init__(
        self,
        url: str,
        *,
        timeout: float | tuple[float, float] = (5.0, 120.0),
        deadline_s: float = 300.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        batch_size: int = 512,
        pool_size: int = 16,
    ):
        self.base_url, self.url = _split_url(url)
        # (connect, read) seconds per attempt; the read timeout is also cut to the time left before the deadline
        self.connect_timeout_s, read_timeout_s = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        self.policy = RetryPolicy(
            attempts=retries + 1,
            deadline_s=deadline_s,
            attempt_timeout_s=read_timeout_s,
            backoff_s=backoff,
            max_backoff_s=max_backoff,
        )
        self.batch_size = batch_size
        self.pool_size = pool_size
        self.requests_sent = 0
        self._local = threading.local()
        self._info: dict[str, Any] | None = None
        self._counter_lock = threading.Lock()

    @property
    def session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=1, pool_maxsize=self.pool_size, max_retries=0)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
        return session

    def _attempt(self, method: str, url: str, payload: Any | None, attempt: Attempt) -> requests.Response:
        timeout = (min(self.connect_timeout_s, attempt.timeout_s), attempt.timeout_s)
        response = self.session.request(method, url, json=payload, timeout=timeout)
        with self._counter_lock:
            self.requests_sent += 1
        if response.status_code < 400:
            return response
        if retryable_status(response.status_code):
            raise RetryableStatus(
                response.status_code, _error_message(response), retry_after_seconds(response.headers.get("retry-after"))
            )
        raise RetrievalRequestError(response.status_code, _error_message(response))

    def _request(self, method: str, url: str, payload: Any | None = None) -> requests.Response:
        try:
            return call(lambda attempt: self._attempt(method, url, payload, attempt), self.policy, f"{method} {url}")
        except CallFailed as exc:
            raise RetrievalError(exc.message, hint="check that the retrieval server is up and answering") from None

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-`k` hits per query from the server, in query order (scores always requested)."""
        k = check_k(k)
        results: list[list[Hit]] = []
        for start in range(0, len(queries), self.batch_size):
            batch = list(queries[start : start + self.batch_size])
            response = self._request("POST", self.url, {"queries": batch, "topk": k, "return_scores": True})
            results.extend(_parse_result(response, len(batch)))
        return results

    def info(self) -> dict[str, Any]:
        """The server's index manifest (`GET /info`), or a description of the URL for servers without `/info`."""
        if self._info is None:
            try:
                response = self._request("GET", self.base_url + "/info")
                info = response.json()
            except (RetrievalRequestError, ValueError):
                digest = hashlib.sha256(self.url.encode()).hexdigest()
                info = {"retriever": "http", "url": self.url, "index_hash": f"url:{digest}", "corpus_hash": None}
            info = dict(info)
            info["served_by"] = self.url
            self._info = info
        return dict(self._info)

    def health(self) -> dict[str, Any]:
        return self._request("GET", self.base_url + "/health").json()


def _error_message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("error") or body)[:500]
    return str(body)[:500]


def _parse_result(response: requests.Response, expected: int) -> list[list[Hit]]:
    try:
        body = response.json()
        result = body["result"]
    except (ValueError, KeyError, TypeError):
        raise RetrievalError(f"retrieval server sent a body without 'result': {response.text[:300]!r}") from None
    if not isinstance(result, list) or len(result) != expected:
        raise RetrievalError(
            f"retrieval server returned {len(result) if isinstance(result, list) else 'no'} "
            f"result lists for {expected} queries"
        )
    parsed: list[list[Hit]] = []
    for entries in result:
        if not isinstance(entries, list):
            raise RetrievalError(
                f"retrieval server returned {type(entries).__name__} where a list of hits belongs: {entries!r:.200}"
            )
        hits: list[Hit] = []
        for entry in entries:
            document = entry.get("document", entry) if isinstance(entry, dict) else None
            if not isinstance(document, dict):
                raise RetrievalError(f"retrieval server returned a malformed hit: {entry!r:.200}")
            contents = document.get("contents")
            if contents is None:
                contents = join_contents(str(document.get("title", "")), str(document.get("text", "")))
            score = entry.get("score") if "document" in entry else None
            hits.append(
                Hit(doc_id=str(document.get("id", "")), contents=str(contents), score=_score(score), rank=len(hits) + 1)
            )
        parsed.append(hits)
    return parsed


def _score(value: Any) -> float:
    """A hit's score as a float (NaN when the server sends none); anything else is the server's error."""
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RetrievalError(
            f"retrieval server returned the score {value!r}; scores must be finite numbers",
            hint="fix the server's /retrieve answer (Search-R1 format: [{'document': {...}, 'score': 0.5}])",
        )
    return float(value)
