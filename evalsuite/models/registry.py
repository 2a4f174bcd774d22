"""Backends by stable name, each a lazy `module:Class` target so unused heavy libraries are never imported."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from evalsuite.errors import EvalsuiteError, first_line
from evalsuite.models.base import Backend
from evalsuite.models.preflight import check_model
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


def top_p_backends() -> list[str]:
    """The registered backends that pass `--top-p` to their sampler (`Backend.supports_top_p`), plugins included;
    each backend's module is imported (not its heavy library), so this is for messages, not for every run."""
    return [name for name in list_backends() if backend_class(name).supports_top_p]


def check_backend_ready(name: str, model: str, options: dict[str, Any]) -> None:
    """Before anything loads: the backend's packages are installed and it can load `model` (`models.preflight`), or
    one line says what to do."""
    backend_class(name).check_installed()
    check_model(name, model, options)


def load_backend(name: str, model: str, **options: Any) -> Backend:
    """Instantiate backend `name` for `model` (a path, hub name, GGUF file, endpoint model or recording).

    A model the backend cannot load (`models.preflight`), a library's refusal of it, or an option of the wrong type
    is the user's error, reported in one line."""
    # the abstract Backend declares no constructor: each backend's takes the model and options of its own
    build: Callable[..., Backend] = backend_class(name)
    check_backend_ready(name, model, options)
    try:
        return build(model, **options)
    except (TypeError, ValueError) as exc:
        shown = " ".join(f"{key}={value}" for key, value in options.items()) or "none"
        raise EvalsuiteError(
            f"the {name} backend could not start with model {model} and options {shown}: {exc}",
            hint="check --model and each --backend-option KEY=VALUE (numbers where numbers are expected)",
        ) from None
    except OSError as exc:
        if exc.errno is not None:
            raise  # the machine's error (disk full, permissions): evalsuite.errors.user_error words it
        # transformers and the hub clients raise errno-less OSErrors whose text spans many lines
        raise EvalsuiteError(
            f"the {name} backend could not load --model {model}: {first_line(exc)}",
            hint="check that --model is a complete model (config, weights, tokenizer) for this backend",
        ) from None


def guess_backend(model: str) -> str:
    """The backend a model spec implies: `.gguf` → xllamacpp (its prebuilt wheel, the demo's) when it is installed,
    else llamacpp; `http(s)://` → openai; `.json` recordings → replay; else hf."""
    return backend_choice(model)[0]


def backend_choice(model: str) -> tuple[str, str]:
    """The backend `--model` implies and why, as the run prints it and records it in the manifest."""
    lowered = model.lower()
    if lowered.startswith(("http://", "https://")):
        return "openai", "an http(s) URL"
    if lowered.endswith(".gguf"):
        if importlib.util.find_spec("xllamacpp") is not None:
            return "xllamacpp", "a .gguf file, and xllamacpp is installed"
        return "llamacpp", "a .gguf file, and xllamacpp is not installed"
    if lowered.endswith(".json") or lowered.endswith(".jsonl"):
        return "replay", "a recording (.json/.jsonl)"
    return "hf", "a model folder or hub id"
