"""The replay backend: the model turns come from a recorded trajectory file, retrieval runs live (or replays too).

Turn i of example X is the i-th stretch of model text of X's recorded response (`evalsuite.protocol.recording`).
This gives deterministic tests and overhead benchmarks with real model text and zero model time; the replay
retriever (`evalsuite.retrieval.replay`) serves the recorded passages.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

from evalsuite.models.base import (
    Backend,
    Generation,
    GenerationRequest,
    approx_token_count,
)
from evalsuite.protocol.recording import load_recording
from evalsuite.provenance import text_sha256

_CHATML_SYSTEM = re.compile(r"^<\|im_start\|>system\n(.*?)<\|im_end\|>\n", re.DOTALL)


class ReplayBackend(Backend):
    """Returns turn i of the recorded example named by each request's key."""

    name = "replay"
    supports_async = True
    operational_options = frozenset({"delay_s"})  # an artificial delay per call

    def __init__(self, model: str, delay_s: float = 0.0, **options: Any):
        self.path = Path(model)
        # A fixed sleep per call, whatever the batch size: the shape of GPU batching, for benchmarks and kill tests.
        self.delay_s = float(delay_s)
        self.examples = load_recording(self.path)
        self._system = self._chatml_system()

    def _chatml_system(self) -> str | None:
        first = next(iter(self.examples.values()), None)
        match = _CHATML_SYSTEM.match(first.prompt) if first else None
        return match.group(1) if match else None

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        """The recording's own ChatML (Qwen) template with its system message, when its prompts use one."""
        if self._system is None:
            return None
        out = f"<|im_start|>system\n{self._system}<|im_end|>\n"
        for message in messages:
            out += f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n"
        return out + "<|im_start|>assistant\n"

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        if self.delay_s:
            time.sleep(self.delay_s)
        return [self._one(request) for request in requests]

    async def agenerate(self, request: GenerationRequest) -> Generation:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self._one(request)

    def _one(self, request: GenerationRequest) -> Generation:
        if request.key is None:
            return Generation(
                text="", finish_reason="error", error="the replay backend needs request keys (example id, turn)"
            )
        example_id, turn = request.key
        example = self.examples.get(example_id)
        if example is None:
            return Generation(
                text="", finish_reason="error", error=f"{self.path}: no recorded trajectory for id {example_id!r}"
            )
        if turn >= len(example.turns):
            return Generation(text="", completion_tokens=0, finish_reason="exhausted")
        text = example.turns[turn]
        stop = next((s for s in request.stop if text.endswith(s)), None)
        finish = (
            "stop"
            if stop
            else ("length" if example.stop_reason == "length" and turn == len(example.turns) - 1 else "eos")
        )
        return Generation(
            text=text,
            completion_tokens=approx_token_count(text),
            finish_reason=finish,
            stop_string=stop,
        )

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "version": "1",
            "model": str(self.path),
            "model_hash": text_sha256(self.path.read_text(encoding="utf-8")),
            "examples": len(self.examples),
        }
