"""One judge behind an OpenAI-compatible endpoint: cached, concurrency-limited, retried with bounded backoff, accounted."""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import asdict, dataclass

from evalsuite.errors import EvalsuiteError, require
from evalsuite.judges.cache import CachedReply, JudgeCache, cache_key
from evalsuite.judges.config import JudgeConfig
from evalsuite.judges.prompts import PromptTemplate


@dataclass
class JudgeUsage:
    """Per-judge accounting: logical calls, cache hits, HTTP attempts, retries, failures, tokens and cost."""

    calls: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class JudgeReply:
    """A reply's text (None when every attempt failed), its token counts and whether it came from the cache."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    error: str | None = None


def _retryable(exc: BaseException) -> bool:
    """429, 5xx, timeouts and dropped connections are retried; other 4xx are the caller's fault and are not."""
    openai = require("openai", "judge", "LLM judges")
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, asyncio.TimeoutError)):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class JudgeClient:
    """Calls one judge model; `ask` returns the reply text, from the cache when the same request was made before."""

    def __init__(self, config: JudgeConfig, cache: JudgeCache, semaphore: asyncio.Semaphore):
        openai = require("openai", "judge", "LLM judges")
        api_key = "not-needed"
        if config.api_key_env:
            api_key = os.environ.get(config.api_key_env, "")
            if not api_key:
                raise EvalsuiteError(f"judge {config.name!r}: environment variable {config.api_key_env} is not set", hint=f"export {config.api_key_env}=...")
        self.config = config
        self.cache = cache
        self.usage = JudgeUsage()
        self._semaphore = semaphore
        # Retries are ours (bounded, counted); the SDK's own would hide attempts from the accounting.
        self._client = openai.AsyncOpenAI(base_url=config.base_url, api_key=api_key, timeout=config.timeout_s, max_retries=0)
        self._rng = random.Random(0)

    def _settings(self) -> dict[str, object]:
        c = self.config
        return {"temperature": c.temperature, "max_tokens": c.max_tokens, "seed": c.seed, "response_format": c.response_format}

    async def ask(self, template: PromptTemplate, values: dict[str, str]) -> JudgeReply:
        """The judge's reply to one filled template; failures after all retries come back as a reply with `error`."""
        messages = template.messages(values)
        key = cache_key(self.config.model, template.hash, messages, self._settings())
        self.usage.calls += 1
        hit = self.cache.get(key)
        if hit is not None:
            self.usage.cache_hits += 1
            return JudgeReply(hit.text, hit.prompt_tokens, hit.completion_tokens, cached=True)
        async with self._semaphore:
            reply = await self._request_with_retries(messages)
        if reply.text is not None:
            self.cache.put(key, self.config.model, template.hash, CachedReply(reply.text, reply.prompt_tokens, reply.completion_tokens))
        return reply

    async def _request_with_retries(self, messages: list[dict[str, str]]) -> JudgeReply:
        c = self.config
        last_error = ""
        for attempt in range(c.max_retries + 1):
            if attempt:
                self.usage.retries += 1
            self.usage.requests += 1
            try:
                return await self._request(messages)
            except Exception as exc:  # noqa: BLE001 - classified just below; anything else propagates
                if not _retryable(exc):
                    raise EvalsuiteError(f"judge {c.name!r} ({c.model} at {c.base_url}) refused the request: {exc}") from exc
                last_error = f"{type(exc).__name__}: {exc}"
                if attempt == c.max_retries:
                    break
                delay = min(c.backoff_max_s, c.backoff_base_s * 2**attempt) * (0.5 + self._rng.random() / 2)
                hinted = _retry_after(exc)
                await asyncio.sleep(min(c.backoff_max_s, hinted) if hinted is not None else delay)
        self.usage.failures += 1
        return JudgeReply(None, error=f"gave up after {c.max_retries + 1} attempts: {last_error}")

    async def _request(self, messages: list[dict[str, str]]) -> JudgeReply:
        c = self.config
        kwargs: dict[str, object] = {"model": c.model, "messages": messages, "temperature": c.temperature, "max_tokens": c.max_tokens}
        if c.seed is not None:
            kwargs["seed"] = c.seed
        if c.response_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        response = await self._client.chat.completions.create(**kwargs)
        text = response.choices[0].message.content or ""
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
        self.usage.cost_usd += (prompt_tokens * c.price_input_per_mtok + completion_tokens * c.price_output_per_mtok) / 1e6
        return JudgeReply(text, prompt_tokens, completion_tokens)

    async def close(self) -> None:
        await self._client.close()
