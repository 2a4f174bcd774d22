"""Backends by stable name, each a lazy `module:Class` target so unused heavy libraries are never imported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Backend
from evalsuite.registry import Registry


def _check_backend(name: str, value: Any) -> type[Backend]:
    if not (isinstance(value, type) and issubclass(value, Backend)):
        raise EvalsuiteError(
            f"backend {name!r} is {value!r}, not a subclass of evalsuite.models.base.Backend",
            hint="point the entry point at a Backend subclass",
        )
    return value


BACKENDS: Registry[type[Backend]] = Registry("backend", check=_check_backend)
for _name, _target in {
    "openai": "evalsuite.models.openai_api:OpenAIBackend",
    "hf": "evalsuite.models.hf:HFBackend",
    "vllm": "evalsuite.models.vllm:VLLMBackend",
    "vllm-async": "evalsuite.models.vllm:VLLMAsyncBackend",
    "llamacpp": "evalsuite.models.llamacpp:LlamaCppBackend",
    "xllamacpp": "evalsuite.models.xllamacpp:XLlamaCppBackend",
    "lmeval": "evalsuite.models.lmeval:LMEvalBackend",
    "replay": "evalsuite.models.replay:ReplayBackend",
}.items():
    BACKENDS.register(_name, _target)


def register_backend(name: str, target: str | type[Backend], *, replace: bool = False) -> None:
    """Register a backend class under `name`, preferably as a lazy `module:Class` target (its heavy library is then
    imported only when the backend is used)."""
    BACKENDS.register(name, target, replace=replace)


def list_backends() -> list[str]:
    """Registered backend names."""
    return sorted(BACKENDS.names())


def backend_class(name: str) -> type[Backend]:
    """The class registered under `name`; unknown names get a did-you-mean hint."""
    return BACKENDS.get(name)


def load_backend(name: str, model: str, **options: Any) -> Backend:
    """Instantiate backend `name` for `model` (a path, hub name, GGUF file, endpoint model or recording).

    A model file of the wrong kind or an option of the wrong type is the user's error, reported in one line."""
    # the abstract Backend declares no constructor: each backend's takes the model and options of its own
    build: Callable[..., Backend] = backend_class(name)
    if name in ("llamacpp", "xllamacpp"):
        check_gguf(model)
    try:
        return build(model, **options)
    except (TypeError, ValueError) as exc:
        shown = " ".join(f"{key}={value}" for key, value in options.items()) or "none"
        raise EvalsuiteError(
            f"the {name} backend could not start with model {model} and options {shown}: {exc}",
            hint="check --model and each --backend-option KEY=VALUE (numbers where numbers are expected)",
        ) from None


def check_gguf(path: str) -> None:
    """Refuse a file that is not GGUF before llama.cpp tries to load it (GGUF files start with b'GGUF')."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        return  # a missing file gets the backend's own message
    if magic != b"GGUF":
        raise EvalsuiteError(
            f"{path} is not a GGUF file (it starts with {magic!r}, not b'GGUF')",
            hint="the llamacpp backend needs a .gguf model file; for a Hugging Face checkpoint use --backend hf",
        )


def guess_backend(model: str) -> str:
    """The backend a model spec implies: `.gguf` → llamacpp,
    `http(s)://` → openai, `.json` recordings → replay, else hf."""
    lowered = model.lower()
    if lowered.startswith(("http://", "https://")):
        return "openai"
    if lowered.endswith(".gguf"):
        return "llamacpp"
    if lowered.endswith(".json") or lowered.endswith(".jsonl"):
        return "replay"
    return "hf"
