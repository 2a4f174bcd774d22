"""Models for training runs: a packaged model's name (`smollm2-135m`, the default; `gemma3-270m`,
`qwen2.5-coder-0.5b`) becomes its dequantized fp32 directory (`evalsuite.models.packaged`); anything else is a path
or hub name. `freeze`: parameters kept out of training by name."""

from __future__ import annotations

from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.packaged import resolve_model as resolve_packaged

SMOLLM2 = "smollm2-135m"


def resolve_model(spec: str) -> str:
    """The directory TRL loads for `spec`: a packaged model's
    dequantized directory (built on first use), else `spec`."""
    return resolve_packaged(spec)


def freeze_parameters(model: Any, names: list[str]) -> list[str]:
    """Stop gradients to every parameter whose dotted name contains one of `names` (`embed_tokens`, `lm_head`): no
    gradient, no optimizer state. A name that matches nothing is refused in one line (a typo would train them all).
    Returns the frozen parameter names, a tied weight under each of its names (Qwen2.5: embedding and output layer)."""
    frozen = []
    for parameter_name, parameter in model.named_parameters(remove_duplicate=False):  # tied weights by each name
        if any(name in parameter_name for name in names):
            parameter.requires_grad_(False)
            frozen.append(parameter_name)
    unmatched = [name for name in names if not any(name in frozen_name for frozen_name in frozen)]
    if unmatched:
        raise EvalsuiteError(
            f"freeze: {', '.join(unmatched)} matches no parameter of {type(model).__name__}",
            hint="name parts of parameter names, e.g. embed_tokens, lm_head (model.named_parameters())",
        )
    return frozen


def freeze_callback(names: list[str]) -> Any:
    """A transformers TrainerCallback that freezes `names` when the trainer is built, before its optimizer exists."""
    from transformers import TrainerCallback

    class Freeze(TrainerCallback):
        def on_init_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            freeze_parameters(model, names)

    return Freeze()
