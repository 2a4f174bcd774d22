"""The one way evalsuite builds an `openai` SDK client for an OpenAI-compatible endpoint (judges, generation).

The SDK's own retries are switched off: every call goes through `evalsuite.retry`, which counts attempts, honours
Retry-After and keeps the whole call under its deadline; a second retry layer inside the SDK would hide attempts and
multiply the worst-case wait. Local servers (vLLM, llama.cpp) take any API key, so a missing one is a placeholder.
"""

from __future__ import annotations

import os
from typing import Any

from evalsuite.errors import EvalsuiteError, require

# What the SDK is given when an endpoint needs no key (it refuses to build a client without one).
NO_KEY = "not-needed"


def api_key_from_env(variable: str | None, who: str) -> str | None:
    """The API key in environment variable `variable` (None when no variable is named); an unset one is an error
    naming `who` needs it."""
    if not variable:
        return None
    key = os.environ.get(variable, "")
    if not key:
        raise EvalsuiteError(f"{who}: environment variable {variable} is not set", hint=f"export {variable}=...")
    return key


def openai_client(
    base_url: str, api_key: str | None, timeout_s: float, *, extra: str, purpose: str, asynchronous: bool = True
) -> Any:
    """An `openai.AsyncOpenAI` (or `openai.OpenAI`) for `base_url` with SDK retries off and `timeout_s` per request;
    `extra` and `purpose` name the install extra in the error when the SDK is missing."""
    openai = require("openai", extra, purpose)
    kind = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return kind(base_url=base_url, api_key=api_key or NO_KEY, timeout=timeout_s, max_retries=0)
