"""A real HTTP server on 127.0.0.1 that injects faults in front of a real server (judges, model, retrieval).

Each request is either forwarded to `upstream` or answered with a fault. Faults come from `script` (one per request,
in order, e.g. ["die", "429"]) and, once the script is used up, from a seeded share `fault_rate` of requests whose
kinds take turns (429, 500, hang), so any three random faults include each kind.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

RANDOM_KINDS = ("429", "500", "hang")


def _completion(content: str | None) -> bytes:
    """A chat completion whose message content is `content` (what a server with an empty reply sends)."""
    return json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1},
    }).encode()


# Faults answered with a complete HTTP response: status, body, headers.
CANNED: dict[str, tuple[int, bytes, dict[str, str]]] = {
    "429": (429, json.dumps({"error": {"message": "rate limited (injected)", "type": "rate_limit"}}).encode(), {"Content-Type": "application/json", "Retry-After": "0.05"}),
    "500": (500, json.dumps({"error": {"message": "server error (injected)", "type": "server_error"}}).encode(), {"Content-Type": "application/json"}),
    "503": (503, json.dumps({"detail": "warming up (injected)"}).encode(), {"Content-Type": "application/json"}),
    "400": (400, json.dumps({"error": {"message": "bad request (injected)", "type": "invalid_request_error"}}).encode(), {"Content-Type": "application/json"}),
    "422": (422, json.dumps({"detail": "unprocessable (injected)"}).encode(), {"Content-Type": "application/json"}),
    "empty": (200, _completion(""), {"Content-Type": "application/json"}),
    "null": (200, _completion(None), {"Content-Type": "application/json"}),
    "nochoices": (200, json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}).encode(), {"Content-Type": "application/json"}),
    "nonjson": (200, b"<html><body>Bad gateway page from a proxy</body></html>", {"Content-Type": "text/html"}),
    "badjson": (200, b'{"choices": [', {"Content-Type": "application/json"}),
}


class FaultProxy:
    """Forwards to `upstream` (None: every request must be scripted); `counts` tallies what each request got.

    Kinds: "forward", the CANNED answers, "hang" (read the request, answer nothing for `hang_s`, then drop the
    connection), "die" (send the headers and part of the body, then drop the connection: the server died mid-response).
    """

    def __init__(self, upstream: str | None, fault_rate: float = 0.0, seed: int = 0, hang_s: float = 5.0, script: Iterable[str] = ()):
        parts = urlsplit(upstream) if upstream else None
        self.upstream_host, self.upstream_port = (parts.hostname, parts.port) if parts else (None, None)
        self.fault_rate = fault_rate
        self.hang_s = hang_s
        self.script: deque[str] = deque(script)
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.base + "/v1"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()

    def _decide(self) -> str:
        with self._lock:
            self.counts["received"] += 1
            if self.script:
                kind = self.script.popleft()
            elif self._rng.random() < self.fault_rate:
                kind = RANDOM_KINDS[self.counts["faults"] % 3]
                self.counts["faults"] += 1
            else:
                kind = "forward"
            self.counts[kind] += 1
            return kind

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    with proxy._lock:
                        proxy.counts["client_gone"] += 1  # the client gave up first (it timed out)

            def _handle(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                kind = proxy._decide()
                if kind in CANNED:
                    return self._reply(*CANNED[kind])
                if kind == "hang":
                    time.sleep(proxy.hang_s)  # the client times out first; then the connection is dropped
                    self.close_connection = True
                    return None
                if kind == "die":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "4096")
                    self.end_headers()
                    self.wfile.write(b'{"result": [[{"document"')
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                assert kind == "forward" and proxy.upstream_host, f"unscripted request with no upstream ({kind})"
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=600)
                try:
                    upstream.request(method, self.path, body=body or None, headers={"Content-Type": "application/json"})
                    response = upstream.getresponse()
                    data = response.read()
                    with proxy._lock:
                        proxy.counts["upstream_ok" if response.status == 200 else f"upstream_{response.status}"] += 1
                    self._reply(response.status, data, {"Content-Type": response.getheader("Content-Type", "application/json")})
                finally:
                    upstream.close()

            def do_POST(self) -> None:
                self._handle("POST")

            def do_GET(self) -> None:
                self._handle("GET")

        return Handler
