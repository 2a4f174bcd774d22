"""Models for training runs: a packaged model's name (`smollm2-135m`, the default; `gemma3-270m`) becomes its
dequantized fp32 directory (`evalsuite.models.packaged`); anything else is a path or hub name."""

from __future__ import annotations

from evalsuite.models.packaged import resolve_model as resolve_packaged

SMOLLM2 = "smollm2-135m"


def resolve_model(spec: str) -> str:
    """The directory TRL loads for `spec`: a packaged model's
    dequantized directory (built on first use), else `spec`."""
    return resolve_packaged(spec)
