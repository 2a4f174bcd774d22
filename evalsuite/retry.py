"""The one retry policy of every network call (retrieval server, model endpoint, judges).

Only transient failures are retried: connection errors (refused, reset, a server dying mid-response), timeouts,
429 and 5xx. Waits grow exponentially with full jitter (or follow a server's Retry-After), and the whole call,
waits included, stays under a deadline: each attempt's timeout is cut to the time left. Anything else (a 4xx, a
malformed body) is raised at once. Callers never wrap a retried call in another retry loop, so the deadline a
user sets is the longest a call can take.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import requests
import tenacity

from evalsuite.errors import EvalsuiteError

T = TypeVar("T")


def retryable_status(status: int) -> bool:
    """429 (slow down) and 5xx (the server's trouble) are worth another attempt; other 4xx are the request's fault."""
    return status == 429 or status >= 500


# Typed fields with defaults, shaped like other settings records (RolloutConfig); nothing to share.
@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long one call may be tried: at most `attempts` tries, all within `deadline_s`."""

    attempts: int = 4
    deadline_s: float = 300.0
    attempt_timeout_s: float = 120.0
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0

    def __post_init__(self) -> None:
        if (
            self.attempts < 1
            or self.deadline_s <= 0
            or self.attempt_timeout_s <= 0
            or self.backoff_s < 0
            or self.max_backoff_s < 0
        ):
            raise EvalsuiteError(
                f"invalid retry settings {self}",
                hint="attempts >= 1, positive deadline and timeout, non-negative backoff",
            )


@dataclass(frozen=True)
class Attempt:
    """One try of a call: its number (from 1) and the timeout it must respect (the time left before the deadline)."""

    number: int
    timeout_s: float


class RetryableStatus(Exception):
    """An HTTP answer worth retrying (429 or 5xx); `retry_after` is the server's Retry-After in seconds, if any."""

    def __init__(self, status: int, message: str, retry_after: float | None = None):
        self.status = status
        self.retry_after = retry_after
        super().__init__(f"HTTP {status}: {message}")


class CallFailed(EvalsuiteError):
    """A call failed on every attempt it was allowed, or ran out of time."""

    def __init__(self, what: str, attempts: int, elapsed_s: float, policy: RetryPolicy, last: BaseException | None):
        self.attempts = attempts
        self.last = last
        why = f"stopped at the {policy.deadline_s:g} s deadline" if attempts < policy.attempts else "no attempts left"
        super().__init__(
            f"{what} failed after {attempts} attempt{'s' if attempts != 1 else ''} "
            f"in {elapsed_s:.1f} s ({why}); last error: {describe(last)}"
        )


def describe(exc: BaseException | None) -> str:
    if exc is None:
        return "none"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header given in seconds (the HTTP-date form is ignored)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def is_retryable(exc: BaseException) -> bool:
    """Connection errors, timeouts, 429 and 5xx: the failures that a later attempt can cure."""
    if isinstance(exc, (RetryableStatus, ConnectionError, TimeoutError, asyncio.TimeoutError)):
        return True
    if isinstance(exc, (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)):
        return True
    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(exc, httpx.TransportError):  # timeouts, refused, RemoteProtocolError
        return True
    openai = sys.modules.get("openai")
    if openai is not None:
        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            return True
        if isinstance(exc, openai.APIStatusError):
            return retryable_status(exc.status_code)
    return False


def _server_hint(exc: BaseException | None) -> float | None:
    if isinstance(exc, RetryableStatus):
        return exc.retry_after
    response = getattr(exc, "response", None)  # openai / httpx status errors carry the response
    headers = getattr(response, "headers", None)
    return retry_after_seconds(headers.get("retry-after")) if headers is not None else None


def _retrying(policy: RetryPolicy, what: str, kind: type[tenacity.BaseRetrying]) -> tenacity.BaseRetrying:
    jitter = tenacity.wait_random_exponential(multiplier=policy.backoff_s, max=policy.max_backoff_s)

    def wait(state: tenacity.RetryCallState) -> float:
        hinted = _server_hint(state.outcome.exception() if state.outcome else None)
        return min(policy.max_backoff_s, hinted) if hinted is not None else jitter(state)

    def give_up(state: tenacity.RetryCallState) -> None:
        last = state.outcome.exception() if state.outcome else None
        raise CallFailed(what, state.attempt_number, state.seconds_since_start or 0.0, policy, last) from last

    return kind(
        stop=tenacity.stop_after_attempt(policy.attempts) | tenacity.stop_before_delay(policy.deadline_s),
        wait=wait,
        retry=tenacity.retry_if_exception(is_retryable),
        retry_error_callback=give_up,
    )


def _attempt(policy: RetryPolicy, started: float, number: list[int]) -> Attempt:
    number[0] += 1
    left = policy.deadline_s - (time.monotonic() - started)
    if left <= 0:
        raise TimeoutError(f"the {policy.deadline_s:g} s deadline passed")
    return Attempt(number[0], min(policy.attempt_timeout_s, left))


def call(fn: Callable[[Attempt], T], policy: RetryPolicy, what: str) -> T:
    """`fn(attempt)` until it returns, retrying transient failures
    under `policy`; raises `CallFailed` when it gives up."""
    started, number = time.monotonic(), [0]
    return _retrying(policy, what, tenacity.Retrying)(lambda: fn(_attempt(policy, started, number)))


async def acall(fn: Callable[[Attempt], Awaitable[T]], policy: RetryPolicy, what: str) -> T:
    """The asynchronous `call`; each attempt is also cut off at its timeout, however slowly the server trickles."""
    started, number = time.monotonic(), [0]

    async def once() -> T:
        attempt = _attempt(policy, started, number)
        return await asyncio.wait_for(fn(attempt), attempt.timeout_s)

    return await _retrying(policy, what, tenacity.AsyncRetrying)(once)
