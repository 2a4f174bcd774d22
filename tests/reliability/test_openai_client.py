"""The shared OpenAI SDK client (evalsuite.openai_client): one HTTP request per attempt of evalsuite.retry, because
the SDK's own retries are off (with them, three attempts against a failing server would send nine requests)."""

from __future__ import annotations

import pytest
from fault_proxy import FaultProxy

from evalsuite.errors import EvalsuiteError
from evalsuite.openai_client import api_key_from_env, openai_client
from evalsuite.retry import CallFailed, RetryPolicy, call
from tests.conftest import requires_extra


@requires_extra("openai", "openai")
def test_each_attempt_is_one_request_to_a_failing_server() -> None:
    policy = RetryPolicy(attempts=3, deadline_s=30, attempt_timeout_s=5, backoff_s=0.01, max_backoff_s=0.02)
    with FaultProxy(None, script=["503"] * 12) as proxy:
        client = openai_client(proxy.url + "/v1", None, 5, extra="judge", purpose="test", asynchronous=False)

        def ask(attempt):
            return client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], timeout=attempt.timeout_s)

        with pytest.raises(CallFailed, match="failed after 3 attempts.*Error code: 503"):
            call(ask, policy, "chat")
        assert proxy.counts["received"] == 3
        client.close()


def test_an_api_key_variable_that_is_not_set_is_one_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("EVALSUITE_TEST_KEY", "sk-test")
    assert api_key_from_env("EVALSUITE_TEST_KEY", "judge 'a'") == "sk-test"
    assert api_key_from_env(None, "judge 'a'") is None
    monkeypatch.delenv("EVALSUITE_TEST_KEY")
    with pytest.raises(EvalsuiteError, match="judge 'a': environment variable EVALSUITE_TEST_KEY is not set"):
        api_key_from_env("EVALSUITE_TEST_KEY", "judge 'a'")
