"""vLLM's offline engine for GPUs: continuous batching of a whole turn, tensor parallelism passed through.

Not runnable on the CPU machines of this project (vLLM ships GPU wheels only); `scripts/gpu_smoke.sh` runs it.
"""

from __future__ import annotations

import time
from typing import Any

from evalsuite.errors import require
from evalsuite.models.base import Backend, HFTokenizerMixin, Generation, GenerationRequest


class VLLMBackend(HFTokenizerMixin, Backend):
    """`--model` is a hub name or local directory; options go to `vllm.LLM` (tensor_parallel_size, dtype, ...)."""

    name = "vllm"

    def __init__(self, model: str, tensor_parallel_size: int = 1, dtype: str = "auto", gpu_memory_utilization: float = 0.9,
                 max_model_len: int | None = None, seed: int = 0, **options: Any):
        self.vllm = require("vllm", "vllm", "the vllm backend")
        self.llm = self.vllm.LLM(
            model=model, tensor_parallel_size=tensor_parallel_size, dtype=dtype, seed=seed,
            gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, **options,
        )
        self.tokenizer = self.llm.get_tokenizer()
        self.meta = {"model": model, "tensor_parallel_size": tensor_parallel_size, "dtype": dtype, "version": self.vllm.__version__}

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        params = [
            self.vllm.SamplingParams(
                temperature=r.temperature, max_tokens=r.max_tokens, stop=r.stop, seed=r.seed,
                include_stop_str_in_output=True,  # Search-R1 keeps `</search>` in the response
            )
            for r in requests
        ]
        start = time.perf_counter()
        outputs = self.llm.generate([r.prompt for r in requests], params, use_tqdm=False)
        latency = time.perf_counter() - start
        generations = []
        for request, output in zip(requests, outputs):
            completion = output.outputs[0]
            stop = completion.stop_reason if isinstance(completion.stop_reason, str) else None
            finish = "stop" if stop else ("eos" if completion.finish_reason == "stop" else completion.finish_reason)
            generations.append(Generation(
                text=completion.text, prompt_tokens=len(output.prompt_token_ids or []), completion_tokens=len(completion.token_ids),
                finish_reason=finish, stop_string=stop, latency_s=latency,
            ))
        return generations

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, **self.meta}
