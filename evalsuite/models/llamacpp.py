"""GGUF models in-process through llama-cpp-python (CPU or GPU offload); greedy by default."""

from __future__ import annotations

import ctypes
import os
import time
from collections import OrderedDict
from typing import Any

from evalsuite.errors import EvalsuiteError, require
from evalsuite.models.base import Backend, Generation, GenerationRequest, cut_at_stop


def free_cores() -> int:
    """Cores this process may use minus the 1-minute load average of the others, at least 1.

    llama-cpp-python's default is half the CPUs (1 on a 2-core VM, half the idle speed). More threads than free
    cores is far worse: ggml's threads spin at every barrier, so one descheduled thread stalls the step (measured on
    a 2-core VM at load 7: 64 tokens took 8-14 s with 1 thread, 20-60 s with 2). Thread count does not change output.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(cores, round(cores - busy)))


class SequenceStates:
    """KV-cache snapshots of sequence 0, one per rollout (least recently used dropped beyond `capacity` or `max_bytes`).

    llama-cpp-python reuses the KV cache only for the prefix shared with the previous call. Restoring a rollout's
    own snapshot before its next turn leaves only the new tokens (the observation) to evaluate; llama-cpp-python's
    prefix match then trims whatever the new prompt does not share, so a stale snapshot costs time, never text.
    Gemma-3-270M keeps ~18 KB of KV per token, so a 1,000-token rollout is an 18 MB snapshot.
    """

    def __init__(self, llm: Any, capacity: int, max_bytes: int = 2 << 30):
        self.llm, self.capacity, self.max_bytes = llm, capacity, max_bytes
        self._states: OrderedDict[str, tuple[bytes, list[int]]] = OrderedDict()
        self._bytes = 0

    def save(self, key: str | None) -> None:
        if key is None or self.capacity <= 0:
            return
        import llama_cpp

        ctx, n = self.llm.ctx, self.llm.n_tokens
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        self.forget(key)
        self._states[key] = (bytes(buffer[:written]), self.llm.input_ids[:n].tolist())
        self._bytes += written
        while len(self._states) > self.capacity or (self._bytes > self.max_bytes and len(self._states) > 1):
            self._bytes -= len(self._states.popitem(last=False)[1][0])

    def restore(self, key: str | None) -> None:
        if key is None or key not in self._states:
            return
        import llama_cpp

        blob, ids = self._states[key]
        if ids == self.llm.input_ids[: self.llm.n_tokens].tolist():
            return  # already in the context
        buffer = (ctypes.c_uint8 * len(blob)).from_buffer_copy(blob)
        if llama_cpp.llama_state_seq_set_data(self.llm.ctx, buffer, len(blob), 0) != len(blob):
            self.llm.reset()  # a failed restore leaves nothing trustworthy in the cache: evaluate from scratch
            self.forget(key)
            return
        self.llm.input_ids[: len(ids)] = ids
        self.llm.n_tokens = len(ids)
        self.llm._requires_eval = True  # the logits are not the snapshot's: never sample from them

    def forget(self, key: str | None) -> None:
        dropped = self._states.pop(key, None)
        if dropped is not None:
            self._bytes -= len(dropped[0])


class LlamaCppBackend(Backend):
    """One sequence at a time (llama.cpp's Python API has no batched completion); stops are cut client-side."""

    name = "llamacpp"

    def __init__(
        self, model: str, n_ctx: int = 8192, n_threads: int | None = None, n_threads_batch: int | None = None,
        n_gpu_layers: int = 0, seed: int = 0, kv_states: int = 64, kv_state_bytes: int = 2 << 30, **options: Any,
    ):
        llama_cpp = require("llama_cpp", "llamacpp", "the llamacpp backend")
        if not os.path.isfile(model):
            raise EvalsuiteError(f"GGUF file {model} does not exist", hint="pass --model path/to/model.gguf")
        self.version = getattr(llama_cpp, "__version__", "unknown")
        self.path = model
        self.n_threads = n_threads or free_cores()
        self.n_threads_batch = n_threads_batch or self.n_threads
        self.llm = llama_cpp.Llama(
            model_path=model, n_ctx=n_ctx, n_threads=self.n_threads, n_threads_batch=self.n_threads_batch,
            n_gpu_layers=n_gpu_layers, seed=seed, verbose=False, **options,
        )
        self._template = self.llm.metadata.get("tokenizer.chat_template")
        self.states = SequenceStates(self.llm, kv_states, kv_state_bytes)

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return [self._one(request) for request in requests]

    def _one(self, request: GenerationRequest) -> Generation:
        start = time.perf_counter()
        text, pieces, finish = "", 0, "length"
        rollout = request.key[0] if request.key is not None else None
        try:
            # The engine runs turn t of every rollout before turn t+1, so the context holds another rollout's text;
            # this rollout's own KV state brings back everything but the new observation.
            self.states.restore(rollout)
            # Streamed without server-side stops so the matched stop string stays in the text (Search-R1 keeps it).
            stream = self.llm.create_completion(
                request.prompt, max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed, stream=True,
            )
            for chunk in stream:
                choice = chunk["choices"][0]
                if choice.get("finish_reason") is not None and not choice["text"]:
                    break  # the closing chunk carries no token
                text += choice["text"]
                pieces += 1
                cut, stop = cut_at_stop(text, request.stop)
                if stop is not None:
                    text, finish = cut, "stop"
                    break
            if finish != "stop":
                # llama-cpp-python's stream does not tell max_tokens from end-of-sequence reliably; the count does
                finish = "length" if pieces >= request.max_tokens else "eos"
        except Exception as exc:  # context overflow, decode errors: this example fails, the run goes on
            self.states.forget(rollout)
            return Generation(text="", finish_reason="error", error=f"{type(exc).__name__}: {exc}", latency_s=time.perf_counter() - start)
        self.states.save(rollout)
        stop = next((s for s in request.stop if finish == "stop" and text.endswith(s)), None)
        return Generation(
            text=text,
            prompt_tokens=self.count_tokens(request.prompt),
            completion_tokens=pieces,
            finish_reason=finish,
            stop_string=stop,
            latency_s=time.perf_counter() - start,
        )

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        if not self._template:
            return None  # Gemma-3-270M base has none; llama-cpp-python's llama-2 fallback would be wrong
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        vocab = self.llm
        formatter = Jinja2ChatFormatter(
            template=self._template,
            eos_token=vocab.detokenize([vocab.token_eos()]).decode("utf-8", "replace"),
            bos_token=vocab.detokenize([vocab.token_bos()]).decode("utf-8", "replace"),
        )
        return formatter(messages=messages).prompt

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def truncate_tokens(self, text: str, max_tokens: int) -> str:
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(tokens) <= max_tokens:
            return text
        return self.llm.detokenize(tokens[:max_tokens]).decode("utf-8", "ignore")

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name, "version": self.version, "model": self.path, "n_ctx": self.llm.n_ctx(),
            "n_threads": self.n_threads, "n_threads_batch": self.n_threads_batch,
        }

    def close(self) -> None:
        close = getattr(self.llm, "close", None)
        if close:
            close()
