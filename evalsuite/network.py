"""One quick question before slow network work: does anything answer at this address?

Clients retry for a minute before they admit that a server is not there (the Hugging Face clients, an OpenAI SDK, a
dataset download). One TCP connection attempt with a short timeout, the name lookup bounded too, answers first, so
a dead endpoint is one line naming it. Used by the model preflight, the task loader and download, and `reproduce
--dry-run`.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any
from urllib.parse import urlparse

CONNECT_TIMEOUT_S = 3.0  # one attempt: a reachable host answers a TCP connection in far less
PROXY_ENVS = ("HTTPS_PROXY", "https_proxy")
HUB_OFFLINE_ENVS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


def host_port(url: str) -> tuple[str, int]:
    """The host and port a URL names (the scheme's port where it names none)."""
    parsed = urlparse(url)
    return parsed.hostname or "", parsed.port or (443 if parsed.scheme == "https" else 80)


def unreachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why no TCP connection to `url`'s host and port (through $HTTPS_PROXY for https where one is set) opens within
    `timeout_s`, or None when one does."""
    target = url
    proxy = next((os.environ[name] for name in PROXY_ENVS if os.environ.get(name)), None)
    if proxy and urlparse(url).scheme == "https":
        target = proxy if "://" in proxy else f"http://{proxy}"
    host, port = host_port(target)
    addresses = _resolve(host, port, timeout_s)
    if not addresses:
        return "the name does not resolve"
    family, kind, protocol, _, address = addresses[0]
    try:
        with socket.socket(family, kind, protocol) as connection:
            connection.settimeout(timeout_s)
            connection.connect(address)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _resolve(host: str, port: int, timeout_s: float) -> list[Any]:
    """`host`'s addresses, or [] when the name does not resolve within `timeout_s`: getaddrinfo has no timeout of its
    own, and a machine without a name server may wait for its resolver's retries far longer than that."""
    answer: list[Any] = []

    def lookup() -> None:
        try:
            answer.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError:
            pass

    thread = threading.Thread(target=lookup, name="resolve", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return list(answer) if not thread.is_alive() else []


def hub_endpoint() -> str:
    """The hub the Hugging Face clients talk to ($HF_ENDPOINT, as they read it)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_offline(names: tuple[str, ...] = HUB_OFFLINE_ENVS) -> str | None:
    """The first of the Hugging Face offline switches that is set, or None."""
    return next(
        (name for name in names if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")), None
    )


def hub_unreachable(timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why the Hugging Face hub cannot be reached now (an offline switch set, or no connection), or None; behind any
    proxy the clients use (ALL_PROXY too) the hub is taken as reachable, not probed."""
    if (switch := hub_offline()) is not None:
        return f"{switch} is set"
    if any(os.environ.get(name) for name in (*PROXY_ENVS, "ALL_PROXY", "all_proxy")):
        return None
    endpoint = hub_endpoint()
    if (why := unreachable(endpoint, timeout_s)) is not None:
        host, port = host_port(endpoint)
        return f"{host}:{port}: {why}"
    return None
