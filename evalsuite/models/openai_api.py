"""Any OpenAI-compatible endpoint (vLLM serve, llama.cpp server, hosted APIs) through the `openai` SDK's async client:
bounded concurrency, retried under a deadline per request (`evalsuite.retry`; the SDK's own retries are off):
`timeout_s` per attempt, `retries`, `deadline_s` in all.

Servers batch continuously, so the backend supports the asynchronous schedule (`agenerate`, one request per
trajectory turn); `generate` sends a whole batch at once and waits for all of it (the turn-synchronous schedule).

Sampling (temperature above 0): each request's seed is its key's hash plus the run's seed
(`evalsuite.models.base.request_seed`, as for vLLM in-process), so two trajectories of one prompt draw different
samples and each stays reproducible. A turn-synchronous batch's sampled requests that differ only in consecutive
seeds (a question's K samples' first turns) go out as one request with `n` choices (`native_n_groups`) when the
server serves `n`: vLLM seeds its n children seed, seed + 1, ..., so the answer is what the single requests would
get, and the output never depends on how requests were batched. A server that ignores `n` (llama-cpp-python's
answers one choice) is noticed from its answer and the rest are sent one by one. `native_n=false` always sends them
one by one.

`api=completions` (default) sends the raw prompt text, so the Search-R1 loop continues the assistant's text exactly.
`api=chat` sends the first user message plus the response so far as a final assistant message with
`continue_final_message` (vLLM's extension); servers without it restart the assistant turn instead.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import (
    Needs,
    Backend,
    Generation,
    GenerationRequest,
    infer_stop,
    native_n_groups,
    option_on,
    request_seed,
)
from evalsuite.openai_client import openai_client
from evalsuite.retry import Attempt, CallFailed, RetryPolicy, acall, call, describe

# api=chat renders the user message with these markers, so `generate` can recover the messages.
_USER, _ASSISTANT = "\x00user\x00", "\x00assistant\x00"


class OpenAIBackend(Backend):
    """`--model http://host:port/v1` (model name from /v1/models or `model_name=`), or a model name with `base_url=`."""

    name = "openai"
    needs = (Needs("openai", "openai"),)
    supports_async = True
    supports_top_p = True
    # credentials and connection handling; `native_n`: sampled requests with consecutive seeds sent as one `n`
    # request, which draws what they draw
    operational_options = frozenset(
        {"api_key", "concurrency", "timeout_s", "retries", "backoff_s", "deadline_s", "native_n"}
    )

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        model_name: str | None = None,
        api: str = "completions",
        api_key: str | None = None,
        concurrency: int = 16,
        timeout_s: float = 300.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        deadline_s: float = 900.0,
        native_n: bool | str = True,
        **options: Any,
    ):
        (self.openai,) = self.import_needs()
        if api not in ("completions", "chat"):
            raise EvalsuiteError(f"unknown api {api!r} for the openai backend", hint="use api=completions or api=chat")
        is_url = model.startswith(("http://", "https://"))
        if is_url:
            base_url = model
        if base_url is None:
            raise EvalsuiteError(
                "the openai backend needs an endpoint",
                hint="--model http://127.0.0.1:8000/v1, or --backend-option base_url=...",
            )
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.api_key = api_key
        self.concurrency = concurrency
        try:
            self.policy = RetryPolicy(
                attempts=int(retries) + 1,
                deadline_s=float(deadline_s),
                attempt_timeout_s=float(timeout_s),
                backoff_s=float(backoff_s),
                max_backoff_s=30.0,
            )
        except (TypeError, ValueError):
            raise EvalsuiteError(
                f"invalid openai backend options retries={retries!r} "
                f"timeout_s={timeout_s!r} backoff_s={backoff_s!r} deadline_s={deadline_s!r}",
                hint="give numbers, e.g. --backend-option timeout_s=120",
            ) from None
        self.extra = options
        self.native_n = option_on(native_n)
        self.n_served: bool | None = None  # whether the server answers `n` choices, once an n > 1 answer said so
        # An async client and its concurrency limit belong to one event loop: `generate` runs a loop per batch,
        # the asynchronous schedule one loop for the whole run.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._limit: asyncio.Semaphore | None = None
        self.model_name = model_name or (self._first_model() if is_url else model)

    def _first_model(self) -> str:
        url = f"{self.base_url}/models"
        client = openai_client(
            self.base_url,
            self.api_key,
            self.policy.attempt_timeout_s,
            extra="openai",
            purpose="the openai backend",
            asynchronous=False,
        )

        def attempt(attempt: Attempt) -> Any:
            return client.models.list(timeout=attempt.timeout_s)

        try:
            return call(attempt, self.policy, f"GET {url}").data[0].id
        except (EvalsuiteError, self.openai.OpenAIError, ValueError, AttributeError, IndexError, TypeError) as exc:
            raise EvalsuiteError(
                f"could not list models at {url}: {describe(exc)}", hint="pass --backend-option model_name=NAME"
            ) from None
        finally:
            client.close()

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        if self.api != "chat":
            return None
        return "".join(_USER + m["content"] for m in messages if m["role"] == "user") + _ASSISTANT

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return asyncio.run(self._generate_batch(requests))

    async def _generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """A whole batch at once; sampled requests with consecutive
        seeds share one `n` request (see the module's doc)."""
        groups = native_n_groups(requests, grouping=self.native_n)
        results: list[Generation | None] = [None] * len(requests)

        async def one(indices: list[int]) -> None:
            if len(indices) == 1 or self.n_served is False:
                generations = list(await asyncio.gather(*(self.agenerate(requests[i]) for i in indices)))
            else:
                generations = await self._agenerate(requests[indices[0]], len(indices))
                if len(generations) < len(indices):  # the server ignored `n`: the others one by one
                    self.n_served = False
                    generations += await asyncio.gather(
                        *(self.agenerate(requests[i]) for i in indices[len(generations) :])
                    )
                else:
                    self.n_served = True
            for index, generation in zip(indices, generations):
                results[index] = generation

        try:
            await asyncio.gather(*(one(indices) for indices in groups))
        finally:
            await self.aclose()
        return [r for r in results if r is not None]

    async def agenerate(self, request: GenerationRequest) -> Generation:
        """One generation; any failure (after retries, or a 4xx, or a malformed answer) fails this request only."""
        return (await self._agenerate(request, 1))[0]

    async def _agenerate(self, request: GenerationRequest, n: int) -> list[Generation]:
        """`n` continuations of one request in one call (fewer when the server ignores `n`); a failure fails all n."""
        client, limit = self._connection()
        url = self.base_url + ("/completions" if self.api == "completions" else "/chat/completions")

        async def attempt(attempt: Attempt) -> list[Generation]:
            start = time.perf_counter()
            response = await self._create(client, request, attempt.timeout_s, n)
            try:
                return self._parse(response, request, time.perf_counter() - start)
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                raise _Rejected(f"malformed answer ({describe(exc)}): {str(response)[:300]!r}") from None

        async with limit:  # the deadline starts when the request is sent, not while it waits for a slot
            try:
                return await acall(attempt, self.policy, f"POST {url}")
            except (CallFailed, _Rejected) as exc:
                error = exc.message if isinstance(exc, CallFailed) else f"POST {url}: {exc}"
            except self.openai.APIStatusError as exc:  # a 4xx other than 429: the request's fault, not retried
                error = f"POST {url}: HTTP {exc.status_code}: {exc.response.text[:300]}"
            except (self.openai.OpenAIError, ValueError) as exc:  # a body that is not JSON, an invalid URL
                error = f"POST {url}: malformed answer or request ({describe(exc)})"
        return [Generation(text="", finish_reason="error", error=error) for _ in range(n)]

    def _connection(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._client = openai_client(
                self.base_url, self.api_key, self.policy.attempt_timeout_s, extra="openai", purpose="the openai backend"
            )
            self._limit = asyncio.Semaphore(self.concurrency)
        assert self._limit is not None  # made above with the loop it belongs to
        return self._client, self._limit

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
        self._loop = self._client = self._limit = None

    async def _create(self, client: Any, request: GenerationRequest, timeout_s: float, n: int = 1) -> Any:
        common: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request_seed(request),
            "stop": request.stop,
            "timeout": timeout_s,
        }
        if request.top_p is not None:
            common["top_p"] = request.top_p
        if n > 1:
            common["n"] = n
        if self.api == "completions":
            return await client.completions.create(prompt=request.prompt, extra_body=self.extra or None, **common)
        user, _, response = request.prompt.partition(_ASSISTANT)
        messages = [{"role": "user", "content": user.replace(_USER, "")}]
        extra = dict(self.extra)
        if response:
            messages.append({"role": "assistant", "content": response})
            extra.update(continue_final_message=True, add_generation_prompt=False)
        return await client.chat.completions.create(messages=messages, extra_body=extra or None, **common)

    def _parse(self, response: Any, request: GenerationRequest, latency: float) -> list[Generation]:
        """Every choice of an answer, in choice order. With several choices the usage is the call's: each gets the
        prompt's tokens, and no completion count (the answer gives only their total)."""
        choices = sorted(response.choices, key=lambda c: getattr(c, "index", 0) or 0)
        if not choices:
            raise ValueError("no choices")
        usage = getattr(response, "usage", None)
        completion = getattr(usage, "completion_tokens", None) if len(choices) == 1 else None
        return [
            self._choice(choice, request, getattr(usage, "prompt_tokens", None), completion, latency)
            for choice in choices
        ]

    def _choice(
        self,
        choice: Any,
        request: GenerationRequest,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        latency: float,
    ) -> Generation:
        text = choice.text if self.api == "completions" else (choice.message.content or "")
        if not isinstance(text, str):
            raise TypeError(f"the generated text is a {type(text).__name__}")
        finish = choice.finish_reason or "stop"
        stop = None
        if finish == "stop":
            # Servers drop the matched stop string; vLLM names it in `stop_reason`, others leave us to infer it.
            named = getattr(choice, "stop_reason", None)
            stop = named if isinstance(named, str) and named in request.stop else infer_stop(text, request.stop)
            if stop is not None:
                text += stop
            else:
                finish = "eos"
        return Generation(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=finish,
            stop_string=stop,
            latency_s=latency,
        )

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "version": "1",
            "base_url": self.base_url,
            "model": self.model_name,
            "api": self.api,
            "native_n": self.native_n,
        }


class _Rejected(Exception):
    """The endpoint refused a request (4xx) or answered with something that is not a completion."""
