"""A generation backend over the model being trained: the evaluator's hf backend, sharing the trainer's weights."""

from __future__ import annotations

from typing import Any

from evalsuite.errors import require
from evalsuite.models.base import Generation
from evalsuite.models.hf import HFBackend


class TrainerBackend(HFBackend):
    """`HFBackend` without loading: it generates with the live policy (eval mode during generation, no gradients).
    `bf16`: generate under bf16 autocast, the precision a `bf16: true` trainer computes its forward passes in (its
    weights stay fp32), so the rollouts are sampled from the policy the loss sees."""

    name = "hf-trainer"

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 64, bf16: bool = False):  # noqa: D107 - deliberately skips HFBackend's loading
        self.torch = require("torch", "train", "training")
        self.bf16 = bf16
        self.model, self.tokenizer = model, tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = next(model.parameters()).device
        self.batch_size = batch_size
        self.meta = {
            "model": getattr(model.config, "_name_or_path", None),
            "live": True,
            "dtype": "bfloat16 autocast" if bf16 else str(next(model.parameters()).dtype).removeprefix("torch."),
        }

    def _batch(
        self, prompts: list[str], max_tokens: int, temperature: float, seed: int, stops: list[str]
    ) -> list[Generation]:
        was_training = self.model.training
        self.model.eval()
        try:
            device_type = next(self.model.parameters()).device.type
            with self.torch.autocast(device_type, dtype=self.torch.bfloat16, enabled=self.bf16):
                return super()._batch(prompts, max_tokens, temperature, seed, stops)
        finally:
            if was_training:
                self.model.train()
