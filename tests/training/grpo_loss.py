"""TRL's own GRPO loss on hand-made inputs, with the per-token log-probabilities it used kept for their gradients."""

from __future__ import annotations

from typing import Any


def loss_with_captured_logps(trainer: Any, inputs: dict[str, Any], shift_env: float = 0.0) -> tuple[Any, Any]:
    """Backpropagate `trainer.compute_loss` and return (loss, per-token log-probs with `.grad`). `shift_env` adds a
    constant to the retrieved positions' log-probs only: a loss that ignores them must not change."""
    captured = {}
    original = trainer._get_per_token_logps_and_entropies

    def capture(*args, **kwargs):
        logps, entropies, aux = original(*args, **kwargs)
        logps.retain_grad()
        captured["logps"] = logps
        mask = inputs["tool_mask"].to(logps.dtype)
        return logps + shift_env * (1 - mask), entropies, aux

    trainer._get_per_token_logps_and_entropies = capture
    try:
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, inputs)
        loss.backward()
    finally:
        trainer._get_per_token_logps_and_entropies = original
    return loss, captured["logps"]
