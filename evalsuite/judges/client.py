"""One judge behind an OpenAI-compatible endpoint: cached, concurrency-limited, retried under a deadline, accounted.

Only real replies are cached: an empty or null reply, a 200 whose body is not a completion, a 4xx and a call that
failed after its retries come back as a `JudgeReply` with `error` (that verdict is missing, the run goes on) and are
asked again next time.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass

from evalsuite.errors import EvalsuiteError, require
from evalsuite.judges.cache import CachedReply, JudgeCache, cache_key
from evalsuite.judges.config import JudgeConfig
from evalsuite.judges.prompts import PromptTemplate
from evalsuite.openai_client import api_key_from_env, openai_client
from evalsuite.retry import Attempt, CallFailed, RetryPolicy, acall, describe

# 4xx answers that mean the panel file is wrong (key, model, URL): every call would fail, so the run stops.
_CONFIG_ERRORS = frozenset({401, 403, 404})


# A list of counters: the same shape as other records of typed fields (RolloutConfig), no shared logic.
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


class _CallError(Exception):
    """This call cannot succeed as asked: an empty or null reply, a body that is not a chat completion."""


class JudgeClient:
    """Calls one judge model; `ask` returns the reply text, from the cache when the same request was made before."""

    def __init__(self, config: JudgeConfig, cache: JudgeCache, semaphore: asyncio.Semaphore):
        openai = require("openai", "judge", "LLM judges")
        api_key = api_key_from_env(config.api_key_env, f"judge {config.name!r}")
        self.config = config
        self.cache = cache
        self.usage = JudgeUsage()
        self._semaphore = semaphore
        self._client = openai_client(config.base_url, api_key, config.timeout_s, extra="judge", purpose="LLM judges")
        self._policy = RetryPolicy(
            attempts=config.max_retries + 1,
            deadline_s=config.deadline_s,
            attempt_timeout_s=config.timeout_s,
            backoff_s=config.backoff_base_s,
            max_backoff_s=config.backoff_max_s,
        )
        self._openai = openai

    def _settings(self) -> dict[str, object]:
        c = self.config
        return {
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "seed": c.seed,
            "response_format": c.response_format,
        }

    async def ask(self, template: PromptTemplate, values: dict[str, str]) -> JudgeReply:
        """The judge's reply to one filled template; failures after all retries come back as a reply with `error`."""
        messages = template.messages(values)
        key = cache_key(self.config.model, template.hash, messages, self._settings())
        self.usage.calls += 1
        hit = self.cache.get(key)
        if hit is not None and hit.text.strip():  # an empty reply cached by an older version is asked again
            self.usage.cache_hits += 1
            return JudgeReply(hit.text, hit.prompt_tokens, hit.completion_tokens, cached=True)
        async with self._semaphore:
            reply = await self._request_with_retries(messages)
        if reply.error is None and reply.text is not None:  # a reply without an error always has its text
            self.cache.put(
                key,
                self.config.model,
                template.hash,
                CachedReply(reply.text, reply.prompt_tokens, reply.completion_tokens),
            )
        return reply

    async def _request_with_retries(self, messages: list[dict[str, str]]) -> JudgeReply:
        c = self.config

        async def attempt(attempt: Attempt) -> JudgeReply:
            if attempt.number > 1:
                self.usage.retries += 1
            self.usage.requests += 1
            return await self._request(messages, attempt.timeout_s)

        try:
            return await acall(attempt, self._policy, f"judge {c.name!r} ({c.model} at {c.base_url})")
        except CallFailed as exc:
            error = exc.message
        except _CallError as exc:
            error = str(exc)
        except self._openai.APIStatusError as exc:  # a 4xx other than 429
            if exc.status_code in _CONFIG_ERRORS:
                raise EvalsuiteError(
                    f"judge {c.name!r} ({c.model} at {c.base_url}) refused the request: {describe(exc)}",
                    hint="check the judge's base_url, model and api_key_env in the panel file",
                ) from None
            error = f"refused: {describe(exc)}"
        self.usage.failures += 1
        return JudgeReply(None, error=error)

    async def _request(self, messages: list[dict[str, str]], timeout_s: float) -> JudgeReply:
        c = self.config
        kwargs: dict[str, object] = {
            "model": c.model,
            "messages": messages,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "timeout": timeout_s,
        }
        if c.seed is not None:
            kwargs["seed"] = c.seed
        if c.response_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        try:
            response = await self._client.chat.completions.create(**kwargs)
        except (self._openai.APIResponseValidationError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise _CallError(f"the judge answered with a body that is not a chat completion: {describe(exc)}") from None
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise _CallError(
                f"the judge answered 200 without a reply (choices: {getattr(response, 'choices', None)!r:.200})"
            ) from None
        usage = getattr(response, "usage", None)
        prompt_tokens = (usage.prompt_tokens or 0) if usage else 0
        completion_tokens = (usage.completion_tokens or 0) if usage else 0
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
        self.usage.cost_usd += (
            prompt_tokens * c.price_input_per_mtok + completion_tokens * c.price_output_per_mtok
        ) / 1e6
        if not isinstance(text, str) or not text.strip():
            raise _CallError(f"the judge sent an empty reply ({text!r}); it is not cached and is asked again next run")
        return JudgeReply(text, prompt_tokens, completion_tokens)

    async def close(self) -> None:
        await self._client.close()
