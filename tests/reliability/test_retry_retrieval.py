"""The retrieval client's retries (evalsuite.retry) against real servers: a fault proxy in front of the real
retrieval server on 127.0.0.1. Every wait is bounded, and the engine adds no retries of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_proxy import FaultProxy
from reliability_helpers import write_recording

from evalsuite.agent.engine import RetrievalUnavailable, RolloutConfig, RolloutEngine
from evalsuite.methods.search_r1.method import SearchR1
from evalsuite.models.replay import ReplayBackend
from evalsuite.retrieval.http import HttpRetriever, RetrievalError, RetrievalRequestError


def _client(proxy: FaultProxy, **options) -> HttpRetriever:
    return HttpRetriever(proxy.base + "/retrieve", backoff=0.01, max_backoff=0.05, **options)


@pytest.mark.timeout(60)
def test_a_server_that_never_answers_hits_the_deadline_and_says_so() -> None:
    with FaultProxy(None, script=["hang"] * 200, hang_s=30) as silent:
        client = _client(silent, timeout=(1.0, 0.4), retries=100, deadline_s=1.5)
        with pytest.raises(RetrievalError, match=r"failed after \d+ attempts in 1\.\d s \(stopped at the 1.5 s deadline\); last error: .*[Tt]imed? ?out"):
            client.search(["big fish"], 3)
        assert 2 <= silent.counts["hang"] < 10  # bounded by the deadline, not by the 101 attempts allowed


def test_the_engine_does_not_wrap_the_clients_retries(tmp_path: Path) -> None:
    """Today's engine retried the client's whole retried call five times: 5 x 2 attempts instead of 2."""
    backend = ReplayBackend(str(write_recording(tmp_path / "recording.json", [("a", "big fish", "Daniel Wallace")])))
    with FaultProxy(None, script=["hang"] * 50, hang_s=30) as silent:
        engine = RolloutEngine(backend, SearchR1(), _client(silent, timeout=(1.0, 0.3), retries=1), RolloutConfig(), "base")
        with pytest.raises(RetrievalUnavailable, match="failed after 2 attempts"):
            engine.run([("a", "question a?")])
        assert silent.counts["received"] == 2


def test_a_server_dying_mid_response_is_retried(retrieval_server: str) -> None:
    with FaultProxy(retrieval_server, script=["die"]) as proxy:
        client = _client(proxy)
        (hits,) = client.search(["who wrote big fish"], 3)
        assert proxy.counts["die"] == 1 and proxy.counts["upstream_ok"] == 1
    assert hits == HttpRetriever(retrieval_server).search(["who wrote big fish"], 3)[0]
    assert hits[0].title == "Big Fish"


def test_429_then_200_is_retried_after_the_servers_retry_after(retrieval_server: str) -> None:
    with FaultProxy(retrieval_server, script=["429", "503"]) as proxy:
        (hits,) = _client(proxy).search(["capital of france"], 2)
        assert (proxy.counts["429"], proxy.counts["503"], proxy.counts["upstream_ok"]) == (1, 1, 1)
    assert hits[0].title == "Paris"


def test_a_4xx_is_not_retried(retrieval_server: str) -> None:
    with FaultProxy(retrieval_server) as proxy:
        client = _client(proxy, retries=5)
        with pytest.raises(RetrievalRequestError, match="422.*limit is 8192"):
            client.search(["x" * 9000], 3)
        assert proxy.counts["received"] == 1 and proxy.counts["upstream_422"] == 1


def test_every_attempt_failing_names_the_attempts_and_the_last_error() -> None:
    with FaultProxy(None, script=["500"] * 3) as broken:
        with pytest.raises(RetrievalError, match=r"failed after 3 attempts .*\(no attempts left\); last error: RetryableStatus: HTTP 500"):
            _client(broken, retries=2).search(["q"], 3)
        assert broken.counts["500"] == 3
