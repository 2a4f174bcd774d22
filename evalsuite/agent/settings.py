"""The settings that decide a run's results: what `--resume` and `evalsuite merge` require to be unchanged.

A run directory may only be continued (or its shards combined) by a command that would produce the same records:
the same model (the file's hash, or for a server the model name it serves), the same backend and every backend
option that can change a generation, the same method, prompt, decoding, retrieval and budgets, and the same task
rows (a hash of the rows the run evaluates, so an edited question or gold answer is caught, not just a new file).

Backend options are classified by the ones each backend class declares as only changing how a run goes (speed,
timeouts, credentials), never what it generates (`Backend.operational_options`); every other option, including ones
its backend does not declare, counts as changing the results, so a resume with a different or an added unknown
option is refused rather than mixed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalsuite.runs import Manifest
from evalsuite.runs.setting import RunSetting

# The backend-info key every run has that changes its speed, never its text: the rollout schedule (turn-synchronous
# or asynchronous) sends the same requests either way. The rest are declared by each backend class
# (`Backend.operational_options`); anything not declared (top_p, repeat_penalty, model_name, n_ctx, seed, dtype, an
# option a future backend adds, ...) must match.
RUN_OPERATIONAL = frozenset({"schedule"})
# Backend-info keys compared under "model" (the model's identity) rather than "backend", or pure bookkeeping (why
# `evalsuite run` chose the backend: the backend itself is compared).
_NOT_BACKEND_SETTINGS = frozenset({"model", "base_url", "examples", "chosen_by"})


def operational_options(backend: str | None) -> frozenset[str]:
    """The options and backend-info keys of `backend` that may differ on resume and merge: the run's own and those
    its class declares. A backend that is not registered (a plugin no longer installed) declares none."""
    from evalsuite.models.registry import BACKENDS

    if backend is None or backend not in BACKENDS:
        return RUN_OPERATIONAL
    return RUN_OPERATIONAL | BACKENDS.get(backend).operational_options


def generation_options(options: dict[str, Any], backend: str | None) -> dict[str, Any]:
    """The options of `backend` that can change what it generates (all it does not declare operational)."""
    operational = operational_options(backend)
    return {key: value for key, value in sorted(options.items()) if key not in operational}


def _backend(setting: RunSetting) -> dict[str, Any]:
    """The backend's name, version and every setting it reports or was given that can change a generation."""
    backend = setting.backend.model_dump(exclude_none=True)
    options = backend.pop("options", None) or {}
    operational = operational_options(setting.backend.backend)
    settings = {
        key: value for key, value in backend.items() if key not in operational and key not in _NOT_BACKEND_SETTINGS
    }
    generation = generation_options(options, setting.backend.backend)
    return {**settings, **{f"option {key}": value for key, value in generation.items()}}


# What must be equal, each as a name for messages and how to read it from the run's setting (runs/setting.py, the one
# reading of a manifest's setting).
RESULT_SETTINGS: dict[str, Callable[[RunSetting], Any]] = {
    # A model file's or directory's hash; for a name (hub model, endpoint) the name plus the hub commit it resolved
    # to, or the model the backend resolved it to (an endpoint URL plus the model name that server reports).
    "model": lambda s: s.model.identity(served=s.backend.model),
    "backend": _backend,
    "method": lambda s: s.method,
    "prompt_template_hash": lambda s: s.prompt_template_hash,
    "decoding": lambda s: s.decoding,
    "max_turns": lambda s: s.max_turns,
    "topk": lambda s: s.topk,
    "retriever": lambda s: s.retriever.index_hash or s.retriever.spec,
    "tasks": lambda s: s.tasks,
    "splits": lambda s: s.splits,
    "subset": lambda s: s.subset,
    "subset_ids_hash": lambda s: s.subset_ids_hash,
    "task rows": lambda s: s.task_rows,
    "shard": lambda s: s.shard,
}
RESUME_KEYS = tuple(RESULT_SETTINGS)
MERGE_KEYS = tuple(key for key in RESULT_SETTINGS if key != "shard")


def _differences(name: str, old: Any, new: Any) -> list[str]:
    """One line per differing value; settings that are dicts are compared key by key so the line names the option."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in sorted(set(old) | set(new), key=str):
            if old.get(key) != new.get(key):
                lines.append(f"{name} {key}: the run has {_shown(key, old)}, this command has {_shown(key, new)}")
        return lines
    return [f"{name}: the run has {old!r}, this command has {new!r}"]


def _shown(key: str, values: dict[str, Any]) -> str:
    return repr(values[key]) if key in values else "nothing (not set)"


def settings_differences(old: Manifest, new: Manifest, keys: tuple[str, ...] = RESUME_KEYS) -> list[str]:
    """Human-readable lines naming each result-changing setting that differs between two manifests."""
    before, after = RunSetting.from_manifest(old), RunSetting.from_manifest(new)
    return [
        line for key in keys for line in _differences(key, RESULT_SETTINGS[key](before), RESULT_SETTINGS[key](after))
    ]
