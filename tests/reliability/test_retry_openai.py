"""The OpenAI-compatible backend's retries (evalsuite.retry) through a fault proxy in front of a real llama.cpp
server: transient faults are retried within a deadline; a 4xx or a malformed 200 fails that request only."""

from __future__ import annotations

import pytest
from fault_proxy import FaultProxy

from evalsuite.models.base import GenerationRequest
from evalsuite.models.openai_api import OpenAIBackend
from tests.conftest import requires_extra


def _backend(proxy: FaultProxy, **options) -> OpenAIBackend:
    return OpenAIBackend(proxy.url, model_name="smollm2", backoff_s=0.01, concurrency=1, **options)


def _requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=f"Question {i}: what is the capital of France? Answer:", stop=["\n"], max_tokens=4, temperature=0.0, seed=0, key=(str(i), 0)) for i in range(n)]


def test_a_server_dying_mid_response_and_a_429_are_retried(model_server: str) -> None:
    with FaultProxy(model_server, script=["die", "429"]) as proxy:
        (generation,) = _backend(proxy).generate(_requests(1))
        assert (proxy.counts["die"], proxy.counts["429"], proxy.counts["upstream_ok"]) == (1, 1, 1)
    assert generation.error is None and generation.completion_tokens


def test_a_4xx_fails_that_request_without_retrying(model_server: str) -> None:
    with FaultProxy(model_server, script=["400"]) as proxy:
        first, second = _backend(proxy, retries=5).generate(_requests(2))
        assert proxy.counts["received"] == 2
    assert first.finish_reason == "error" and "HTTP 400" in first.error
    assert second.error is None


def test_a_200_that_is_not_a_completion_fails_that_request_only(model_server: str) -> None:
    with FaultProxy(model_server, script=["nochoices", "nonjson"]) as proxy:
        first, second, third = _backend(proxy, retries=5).generate(_requests(3))
        assert proxy.counts["received"] == 3  # not retried: the server answered, just not with a completion
    assert "malformed answer" in first.error and "malformed answer" in second.error
    assert third.error is None


@pytest.mark.timeout(60)  # without a deadline this waited for 101 timeouts and exponentially growing sleeps
@requires_extra("openai", "openai")
def test_a_server_that_never_answers_fails_the_request_at_the_deadline() -> None:
    with FaultProxy(None, script=["hang"] * 100, hang_s=30) as silent:
        (generation,) = _backend(silent, timeout_s=0.4, retries=100, deadline_s=1.5).generate(_requests(1))
        assert 2 <= silent.counts["hang"] < 10
    assert generation.finish_reason == "error" and "stopped at the 1.5 s deadline" in generation.error
