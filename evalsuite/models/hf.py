"""transformers models: batched generation with left padding, the model's chat template when it has one."""

from __future__ import annotations

import time
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Backend, Generation, GenerationRequest, HFTokenizerMixin, Needs, cut_at_stop
from evalsuite.models.precision import is_bf16, require_cpu_bf16


class HFBackend(HFTokenizerMixin, Backend):
    """`--model` is a local directory or hub name; `gguf_file=` loads (and dequantizes) a GGUF inside that directory."""

    name = "hf"
    needs = (Needs("torch", "hf"), Needs("transformers", "hf"))

    def __init__(
        self,
        model: str,
        gguf_file: str | None = None,
        dtype: str = "float32",
        device: str = "cpu",
        batch_size: int = 8,
        revision: str | None = None,
        trust_remote_code: bool = False,
        **options: Any,
    ):
        self.torch, transformers = self.import_needs()
        dtype = "bfloat16" if is_bf16(dtype) else dtype
        torch_dtype = getattr(self.torch, dtype, None)
        if not isinstance(torch_dtype, self.torch.dtype):
            raise EvalsuiteError(f"the hf backend has no dtype {dtype!r}", hint="dtype float32 or bfloat16")
        if device == "cpu" and dtype == "bfloat16":
            require_cpu_bf16("--backend hf with dtype bfloat16")  # emulated bf16 is slower than fp32: refused
        kwargs: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model, **kwargs)
        self.tokenizer.padding_side = (
            "left"  # decoder-only batching: pad on the left so every prompt ends at the same place
        )
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype, **kwargs, **options)
        self.model.to(device).eval()
        self.device, self.batch_size = device, batch_size
        self.meta = {
            "model": model,
            "gguf_file": gguf_file,
            "revision": revision,
            "dtype": dtype,
            "version": transformers.__version__,
        }

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        # one generate() call per (max_tokens, temperature, seed, stops) group, in chunks of batch_size
        groups: dict[tuple, list[int]] = {}
        for index, request in enumerate(requests):
            groups.setdefault((request.max_tokens, request.temperature, request.seed, tuple(request.stop)), []).append(
                index
            )
        for (max_tokens, temperature, seed, stops), indices in groups.items():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                for index, generation in zip(
                    chunk, self._batch([requests[i].prompt for i in chunk], max_tokens, temperature, seed, list(stops))
                ):
                    results[index] = generation
        return [r for r in results if r is not None]

    def _batch(
        self, prompts: list[str], max_tokens: int, temperature: float, seed: int, stops: list[str]
    ) -> list[Generation]:
        torch = self.torch
        start = time.perf_counter()
        bos = self.tokenizer.bos_token
        # a chat-templated prompt already starts with BOS; add it only where the text lacks it
        add_special = not (bos and all(p.startswith(bos) for p in prompts))
        encoded = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=add_special).to(
            self.device
        )
        torch.manual_seed(seed)
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "pad_token_id": self.tokenizer.pad_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if stops:
            kwargs.update(stop_strings=stops, tokenizer=self.tokenizer)
        with torch.no_grad():
            output = self.model.generate(**encoded, **kwargs)
        latency = time.perf_counter() - start
        width = encoded["input_ids"].shape[1]
        eos = self.tokenizer.eos_token_id
        generations = []
        for row, mask in zip(output, encoded["attention_mask"]):
            new = row[width:].tolist()
            pad = self.tokenizer.pad_token_id
            while new and new[-1] == pad and pad != eos:
                new.pop()
            hit_eos = eos in new
            if hit_eos:
                new = new[: new.index(eos)]
            text, stop = cut_at_stop(self.tokenizer.decode(new, skip_special_tokens=True), stops)
            finish = "stop" if stop else ("eos" if hit_eos else "length")
            generations.append(
                Generation(
                    text=text,
                    prompt_tokens=int(mask.sum()),
                    completion_tokens=len(new),
                    finish_reason=finish,
                    stop_string=stop,
                    latency_s=latency,
                )
            )
        return generations

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, **self.meta}
