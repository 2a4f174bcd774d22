"""The resume and merge check: a run directory may only be continued (or its shards combined) by a command that
would produce the same records: the same model (the file's hash, or for a server the model name it serves), the same
backend and every backend option that can change a generation, the same method, prompt, decoding, retrieval and
budgets, and the same task rows (a hash of the rows the run evaluates, so an edited question or gold answer is caught,
not just a new file). Which settings those are, and how each is read, is declared once in `runs/comparable.py`.
"""

from __future__ import annotations

from typing import Any

from evalsuite.runs import Manifest
from evalsuite.runs.comparable import Use, comparable_setting, names_for
from evalsuite.runs.run_setting import RunSetting

RESUME_KEYS = names_for(Use.RESUME)
MERGE_KEYS = names_for(Use.MERGE)


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
    read = [comparable_setting(key) for key in keys]
    return [line for field in read for line in _differences(field.name, field.identity(before), field.identity(after))]
