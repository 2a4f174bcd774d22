"""A drop-in replacement for Search-R1's `retrieval_server.py` (FastAPI + uvicorn), hardened against bad requests.

`POST /retrieve` takes `{"queries": [str], "topk": int, "return_scores": bool}` and answers
`{"result": [[{"document": {"id", "contents"}, "score": float}, ...], ...]}`, or lists of documents without the
`{"document", "score"}` wrapper when `return_scores` is false (the default), exactly as Search-R1's server does.
`topk` may be omitted or null (the server's `--topk` is used). `GET /health` and `GET /info` (the index manifest)
are added. Every malformed request gets a 4xx JSON body `{"error": code, "detail": message}`.

Differences from Search-R1's server, all on requests it would mishandle: `topk: 0` is rejected (Search-R1 silently
uses its default), string-typed numbers such as `"topk": "3"` are rejected (pydantic coerces them), and requests
over the size limits below are refused. The server binds to 127.0.0.1 unless told otherwise.

Slow and heavy clients are bounded: a connection must deliver its request headers within `header_timeout_s` and
its body within `body_timeout_s` (a slowloris client is disconnected, not waited on), and one request may carry at
most `max_request_chars` query characters in all, so no single request monopolizes the workers. `/info` shows the
manifest without absolute paths. `serve(..., workers=N)` runs N processes that share one listening socket and one
memory-mapped index (the page cache holds one copy).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from evalsuite.retrieval.manifest import public_info
from evalsuite.retrieval.types import Retriever

logger = logging.getLogger("evalsuite.retrieval.server")


@dataclass(frozen=True)
class ServerLimits:
    """Request limits. The default query count covers Search-R1 training (batch size x rollouts per prompt)."""

    max_topk: int = 100
    max_queries: int = 4096
    max_body_bytes: int = 8 * 1024 * 1024
    max_query_chars: int = 8192
    max_request_chars: int = 512 * 1024  # all queries of one request together: a 2,560-query batch of 200 characters
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0


class ApiError(Exception):
    def __init__(self, status: int, error: str, detail: str):
        self.status, self.error, self.detail = status, error, detail
        super().__init__(detail)


_MISSING = object()
_DRAIN_FACTOR = 16  # read (and drop) oversized bodies up to this multiple of the limit so the client sees the 413


def _type_name(value: Any) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def validate_request(payload: Any, default_topk: int, limits: ServerLimits) -> tuple[list[str], int, bool]:
    """(queries, topk, return_scores) from a decoded request body, or an `ApiError` saying what is wrong."""
    if not isinstance(payload, dict):
        raise ApiError(
            422,
            "invalid_request",
            f'the request body must be a JSON object like {{"queries": ["..."], "topk": 3}}, got {_type_name(payload)}',
        )
    queries = payload.get("queries", _MISSING)
    if queries is _MISSING:
        raise ApiError(422, "invalid_request", "'queries' is required: a non-empty list of query strings")
    if not isinstance(queries, list):
        raise ApiError(422, "invalid_request", f"'queries' must be a list of strings, got {_type_name(queries)}")
    if not queries:
        raise ApiError(422, "invalid_request", "'queries' is empty: send at least one query")
    if len(queries) > limits.max_queries:
        raise ApiError(
            422,
            "too_many_queries",
            f"{len(queries)} queries in one request; the limit is {limits.max_queries}: split the batch",
        )
    total_chars = 0
    for i, query in enumerate(queries):
        if not isinstance(query, str):
            raise ApiError(422, "invalid_request", f"queries[{i}] must be a string, got {_type_name(query)}")
        if len(query) > limits.max_query_chars:
            raise ApiError(
                422,
                "query_too_long",
                f"queries[{i}] has {len(query)} characters; the limit is {limits.max_query_chars}",
            )
        total_chars += len(query)
        if total_chars > limits.max_request_chars:
            raise ApiError(
                413,
                "request_too_large",
                f"the queries hold more than {limits.max_request_chars} characters in "
                "all (the limit per request): send fewer or shorter queries per request",
            )
        try:
            query.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(
                422, "invalid_request", f"queries[{i}] is not valid Unicode (it holds a lone surrogate escape)"
            ) from None
    topk = payload.get("topk")
    if topk is None:
        topk = default_topk
    elif isinstance(topk, bool) or not isinstance(topk, int):
        raise ApiError(422, "invalid_request", f"'topk' must be an integer, got {_type_name(topk)}")
    elif topk < 1:
        raise ApiError(422, "invalid_request", f"'topk' must be at least 1, got {topk}")
    elif topk > limits.max_topk:
        raise ApiError(422, "invalid_request", f"'topk' is {topk}; this server allows at most {limits.max_topk}")
    return_scores = payload.get("return_scores", False)
    if not isinstance(return_scores, bool):
        raise ApiError(
            422, "invalid_request", f"'return_scores' must be true or false, got {_type_name(return_scores)}"
        )
    return queries, topk, return_scores


def format_result(results: list[list[Any]], return_scores: bool) -> dict[str, Any]:
    """Search-R1's response body from lists of hits."""
    if return_scores:
        return {"result": [[{"document": hit.document(), "score": hit.score} for hit in hits] for hits in results]}
    return {"result": [[hit.document() for hit in hits] for hits in results]}


async def _read_body(request: Request, limits: ServerLimits) -> bytes:
    try:
        async with asyncio.timeout(limits.body_timeout_s):
            return await _read_body_unbounded(request, limits.max_body_bytes)
    except TimeoutError:
        raise ApiError(
            408, "body_timeout", f"the request body did not arrive within {limits.body_timeout_s:g} s"
        ) from None


async def _read_body_unbounded(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit * _DRAIN_FACTOR:
        raise ApiError(413, "body_too_large", f"the request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        elif size > limit * _DRAIN_FACTOR:
            break
    if size > limit:
        raise ApiError(
            413,
            "body_too_large",
            f"the request body is {'over ' if size > limit * _DRAIN_FACTOR else ''}{size} bytes; the limit is {limit}",
        )
    return b"".join(chunks)


def _json_response(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status_code=status, media_type="application/json")


def create_app(retriever: Retriever, default_topk: int = 3, limits: ServerLimits | None = None, workers: int = 1):
    """The FastAPI application serving one retriever (`workers`: how many processes serve it, shown by /info)."""
    limits = limits or ServerLimits()
    if not 1 <= default_topk <= limits.max_topk:
        raise ValueError(f"default topk {default_topk} must be between 1 and max_topk {limits.max_topk}")
    info = public_info(retriever.info())
    process = {
        "workers": workers,
        "worker_pid": os.getpid(),
        "index_memory_mapped": bool(getattr(retriever, "memory_mapped", False)),
    }
    app = FastAPI(title="evalsuite retrieval server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.retriever = retriever
    app.state.stats = {"requests": 0, "queries": 0, "errors_4xx": 0}

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        app.state.stats["errors_4xx"] += 1
        return _json_response(exc.status, {"error": exc.error, "detail": exc.detail})

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _json_response(exc.status_code, {"error": code, "detail": str(exc.detail)})

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        return _json_response(422, {"error": "invalid_request", "detail": str(exc.errors())[:1000]})

    @app.post("/retrieve")
    async def retrieve(request: Request):
        body = await _read_body(request, limits)
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {str(exc)[:200]}") from None
        queries, topk, return_scores = validate_request(payload, default_topk, limits)
        try:
            results = await run_in_threadpool(retriever.search, queries, topk)
        except Exception as exc:  # a retriever bug, not a bad request: say so, and keep serving
            logger.exception("retrieval failed")
            return _json_response(500, {"error": "retrieval_failed", "detail": f"{type(exc).__name__}: {exc}"[:500]})
        app.state.stats["requests"] += 1
        app.state.stats["queries"] += len(queries)
        return _json_response(200, format_result(results, return_scores))

    @app.get("/health")
    async def health():
        return _json_response(
            200,
            {
                "status": "ok",
                "retriever": info.get("retriever"),
                "documents": info.get("corpus", {}).get("num_documents"),
                "index_hash": info.get("index_hash"),
                **app.state.stats,
            },
        )

    @app.get("/info")
    async def get_info():
        return _json_response(200, {**info, "server": {"default_topk": default_topk, **asdict(limits), **process}})

    return app


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers, counted from the connection (or the first
    byte of a keep-alive request): a client that trickles its headers, or connects and sends nothing, is
    disconnected instead of holding a connection (and a file descriptor) forever. uvicorn has no such timeout."""

    _header_timer: asyncio.TimerHandle | None = None

    @property
    def header_timeout_s(self) -> float:
        return float(getattr(self.config, "header_timeout_s", ServerLimits.header_timeout_s))

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._header_timer is None:
            self._arm_header_timer()  # the first bytes of a request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._cancel_header_timer()  # the headers are in

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def uvicorn_config(app: Any, limits: ServerLimits, **options: Any):
    """The uvicorn configuration every way of serving uses: header deadline, keep-alive, no lifespan."""
    import uvicorn

    options.setdefault("log_level", "warning")
    options.setdefault("access_log", False)
    config = uvicorn.Config(app, lifespan="off", timeout_keep_alive=30, http=HeaderTimeoutProtocol, **options)
    # an attribute uvicorn's Config does not declare, read back with getattr by HeaderTimeoutProtocol; it travels with
    # the config to worker processes
    setattr(config, "header_timeout_s", limits.header_timeout_s)
    return config


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0 picks a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio turns on TCP_NODELAY only for sockets that say so, and without it every
    # response (headers and body are written separately) waits ~40 ms on Nagle + delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/retrieve"


def raise_open_file_limit() -> None:
    """Every connection costs a file descriptor: lift the soft limit to the hard one (often 1,024 -> 65,536+)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else max(soft, 65536), hard)
            )
    except (ImportError, ValueError, OSError):
        pass


def _announce(retriever: Retriever, host: str, port: int, workers: int) -> None:
    info = retriever.info()
    print(
        f"evalsuite retrieval server: {_url(host, port)} ({info.get('retriever')}, "
        f"{info.get('corpus', {}).get('num_documents')} documents, index {str(info.get('index_hash'))[:12]}"
        f"{f', {workers} worker processes' if workers > 1 else ''})",
        flush=True,
    )


def serve(
    retriever: Retriever,
    host: str = "127.0.0.1",
    port: int = 8000,
    default_topk: int = 3,
    limits: ServerLimits | None = None,
    access_log: bool = False,
) -> None:
    """Serve a retriever in this process until interrupted; prints the URL once the socket listens."""
    import uvicorn

    limits = limits or ServerLimits()
    _warn_if_public(host)
    raise_open_file_limit()
    app = create_app(retriever, default_topk, limits)
    sock = bind_socket(host, port)
    _announce(retriever, host, sock.getsockname()[1], 1)
    uvicorn.Server(uvicorn_config(app, limits, access_log=access_log)).run(sockets=[sock])


WORKER_ENV = "EVALSUITE_RETRIEVAL_WORKER"


def serve_workers(
    index: str,
    load_options: dict[str, Any],
    workers: int,
    host: str = "127.0.0.1",
    port: int = 8000,
    default_topk: int = 3,
    limits: ServerLimits | None = None,
    access_log: bool = False,
) -> None:
    """Serve an index directory from `workers` processes (uvicorn's supervisor) sharing one listening socket.

    Each worker loads the index itself; BM25 arrays (and dense indexes loaded with `mmap`) are memory-mapped, so the
    workers share one copy in the page cache. The parent loads it once first to check it and print the URL.
    """
    from uvicorn.supervisors import Multiprocess

    from evalsuite.retrieval.index import load_retriever

    limits = limits or ServerLimits()
    _warn_if_public(host)
    raise_open_file_limit()
    retriever = load_retriever(index, **load_options)
    sock = bind_socket(host, port)
    _announce(retriever, host, sock.getsockname()[1], workers)
    del retriever
    os.environ[WORKER_ENV] = json.dumps(
        {
            "index": str(index),
            "options": load_options,
            "default_topk": default_topk,
            "limits": asdict(limits),
            "workers": workers,
        }
    )
    config = uvicorn_config(f"{__name__}:worker_app", limits, factory=True, workers=workers, access_log=access_log)
    Multiprocess(config, sockets=[sock]).run()


def worker_app():
    """The application of one worker process of `serve_workers` (uvicorn imports and calls this)."""
    from evalsuite.retrieval.index import load_retriever

    spec = json.loads(os.environ[WORKER_ENV])
    retriever = load_retriever(spec["index"], **spec["options"])
    return create_app(retriever, spec["default_topk"], ServerLimits(**spec["limits"]), workers=spec["workers"])


def _warn_if_public(host: str) -> None:
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: binding to {host}: the retrieval server has no authentication", file=sys.stderr, flush=True)


class ServerThread:
    """The server in a background thread of this process (tests,
    benchmarks, notebooks): `with ServerThread(app) as s: s.url`."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, limits: ServerLimits | None = None):
        self.app, self.host, self.port = app, host, port
        self.limits = limits or ServerLimits()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    def start(self, timeout: float = 30.0) -> "ServerThread":
        import uvicorn

        sock = bind_socket(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn_config(self.app, self.limits))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name="retrieval-server"
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the retrieval server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
