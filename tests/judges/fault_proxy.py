"""A real HTTP proxy on 127.0.0.1 in front of a judge server: counts requests and injects seeded 429s, 500s and hangs."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class FaultProxy:
    """Forwards to `upstream`; a seeded share `fault_rate` of requests instead gets a 429, a 500 or no reply (a hang).

    Which requests fail is seeded; the kinds take turns (429, 500, hang), so any three faults include each kind.
    """

    def __init__(self, upstream: str, fault_rate: float = 0.0, seed: int = 0, hang_s: float = 5.0):
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.fault_rate = fault_rate
        self.hang_s = hang_s
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()

    def _decide(self) -> str:
        with self._lock:
            self.counts["received"] += 1
            if self._rng.random() < self.fault_rate:
                kind = ("429", "500", "hang")[self.counts["faults"] % 3]
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

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                kind = proxy._decide()
                if kind == "429":
                    error = json.dumps({"error": {"message": "rate limited (injected)", "type": "rate_limit"}}).encode()
                    return self._reply(429, error, {"Content-Type": "application/json", "Retry-After": "0.05"})
                if kind == "500":
                    error = json.dumps({"error": {"message": "server error (injected)", "type": "server_error"}}).encode()
                    return self._reply(500, error, {"Content-Type": "application/json"})
                if kind == "hang":
                    time.sleep(proxy.hang_s)  # the client times out first; then the connection is dropped
                    self.close_connection = True
                    return None
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=600)
                try:
                    upstream.request("POST", self.path, body=body, headers={"Content-Type": "application/json"})
                    response = upstream.getresponse()
                    data = response.read()
                    with proxy._lock:
                        proxy.counts["upstream_ok" if response.status == 200 else f"upstream_{response.status}"] += 1
                    self._reply(response.status, data, {"Content-Type": response.getheader("Content-Type", "application/json")})
                finally:
                    upstream.close()

        return Handler
