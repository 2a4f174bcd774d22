"""Any OpenAI-compatible endpoint (vLLM serve, llama.cpp server, hosted APIs): async, bounded concurrency, retried
under a deadline per request (`evalsuite.retry`): `timeout_s` per attempt, `retries`, `deadline_s` in all.

`api=completions` (default) sends the raw prompt text, so the Search-R1 loop continues the assistant's text exactly.
`api=chat` sends the first user message plus the response so far as a final assistant message with
`continue_final_message` (vLLM's extension); servers without it restart the assistant turn instead.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evalsuite.errors import EvalsuiteError, require
from evalsuite.models.base import Backend, Generation, GenerationRequest, infer_stop
from evalsuite.retry import Attempt, CallFailed, RetryableStatus, RetryPolicy, acall, call, describe, retry_after_seconds, retryable_status

# api=chat renders the user message with these markers, so `generate` can recover the messages.
_USER, _ASSISTANT = "\x00user\x00", "\x00assistant\x00"


class OpenAIBackend(Backend):
    """`--model http://host:port/v1` (model name from /v1/models or `model_name=`), or a model name with `base_url=`."""

    name = "openai"

    def __init__(
        self, model: str, base_url: str | None = None, model_name: str | None = None, api: str = "completions",
        api_key: str | None = None, concurrency: int = 16, timeout_s: float = 300.0, retries: int = 3, backoff_s: float = 1.0,
        deadline_s: float = 900.0, **options: Any,
    ):
        self.httpx = require("httpx", "openai", "the openai backend")
        if api not in ("completions", "chat"):
            raise EvalsuiteError(f"unknown api {api!r} for the openai backend", hint="use api=completions or api=chat")
        is_url = model.startswith(("http://", "https://"))
        if is_url:
            base_url = model
        if base_url is None:
            raise EvalsuiteError("the openai backend needs an endpoint", hint="--model http://127.0.0.1:8000/v1, or --backend-option base_url=...")
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.concurrency = concurrency
        try:
            self.policy = RetryPolicy(attempts=int(retries) + 1, deadline_s=float(deadline_s), attempt_timeout_s=float(timeout_s), backoff_s=float(backoff_s), max_backoff_s=30.0)
        except (TypeError, ValueError):
            raise EvalsuiteError(
                f"invalid openai backend options retries={retries!r} timeout_s={timeout_s!r} backoff_s={backoff_s!r} deadline_s={deadline_s!r}",
                hint="give numbers, e.g. --backend-option timeout_s=120",
            ) from None
        self.extra = options
        self.model_name = model_name or (self._first_model() if is_url else model)

    def _first_model(self) -> str:
        url = f"{self.base_url}/models"

        def attempt(attempt: Attempt) -> Any:
            response = self.httpx.get(url, headers=self.headers, timeout=attempt.timeout_s)
            self._check_status(response)
            return response.json()

        try:
            return call(attempt, self.policy, f"GET {url}")["data"][0]["id"]
        except (EvalsuiteError, _Rejected, self.httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise EvalsuiteError(f"could not list models at {url}: {describe(exc)}", hint="pass --backend-option model_name=NAME") from None

    @staticmethod
    def _check_status(response: Any) -> None:
        """429 and 5xx are retried; any other 4xx fails the request at once."""
        if response.status_code < 400:
            return
        if retryable_status(response.status_code):
            raise RetryableStatus(response.status_code, response.text[:300], retry_after_seconds(response.headers.get("retry-after")))
        raise _Rejected(f"HTTP {response.status_code}: {response.text[:300]}")

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        if self.api != "chat":
            return None
        return "".join(_USER + m["content"] for m in messages if m["role"] == "user") + _ASSISTANT

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return asyncio.run(self._all(requests))

    async def _all(self, requests: list[GenerationRequest]) -> list[Generation]:
        limit = asyncio.Semaphore(self.concurrency)
        async with self.httpx.AsyncClient(timeout=self.policy.attempt_timeout_s, headers=self.headers) as client:
            return await asyncio.gather(*(self._one(client, limit, r) for r in requests))

    def _payload(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model_name, "max_tokens": request.max_tokens, "temperature": request.temperature,
            "seed": request.seed, "stop": request.stop, **self.extra,
        }
        if self.api == "completions":
            return "/completions", {**body, "prompt": request.prompt}
        user, _, response = request.prompt.partition(_ASSISTANT)
        messages = [{"role": "user", "content": user.replace(_USER, "")}]
        if response:
            messages.append({"role": "assistant", "content": response})
            body.update(continue_final_message=True, add_generation_prompt=False)
        return "/chat/completions", {**body, "messages": messages}

    async def _one(self, client: Any, limit: asyncio.Semaphore, request: GenerationRequest) -> Generation:
        """One generation; any failure (after retries, or a 4xx, or a malformed answer) fails this request only."""
        path, payload = self._payload(request)
        url = self.base_url + path

        async def attempt(attempt: Attempt) -> Generation:
            start = time.perf_counter()
            response = await client.post(url, json=payload, timeout=attempt.timeout_s)
            self._check_status(response)
            try:
                return self._parse(response.json(), request, time.perf_counter() - start)
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                raise _Rejected(f"malformed answer ({describe(exc)}): {response.text[:300]!r}") from None

        async with limit:  # the deadline starts when the request is sent, not while it waits for a slot
            try:
                return await acall(attempt, self.policy, f"POST {url}")
            except (CallFailed, _Rejected) as exc:
                return Generation(text="", finish_reason="error", error=exc.message if isinstance(exc, CallFailed) else f"POST {url}: {exc}")
            except self.httpx.HTTPError as exc:  # not retryable (e.g. an invalid URL)
                return Generation(text="", finish_reason="error", error=f"POST {url}: {describe(exc)}")

    def _parse(self, body: dict[str, Any], request: GenerationRequest, latency: float) -> Generation:
        choice = body["choices"][0]
        text = choice["text"] if self.api == "completions" else (choice["message"].get("content") or "")
        if not isinstance(text, str):
            raise TypeError(f"the generated text is a {type(text).__name__}")
        finish = choice.get("finish_reason") or "stop"
        stop = None
        if finish == "stop":
            # Servers drop the matched stop string; vLLM names it in `stop_reason`, others leave us to infer it.
            named = choice.get("stop_reason")
            stop = named if isinstance(named, str) and named in request.stop else infer_stop(text, request.stop)
            if stop is not None:
                text += stop
            else:
                finish = "eos"
        usage = body.get("usage") or {}
        return Generation(
            text=text, prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
            finish_reason=finish, stop_string=stop, latency_s=latency,
        )

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "version": "1", "base_url": self.base_url, "model": self.model_name, "api": self.api}


class _Rejected(Exception):
    """The endpoint refused a request (4xx) or answered with something that is not a completion."""
