"""GGUF models in-process through xllamacpp: llama.cpp's own server engine, shipped as a prebuilt wheel on PyPI.

Why a second llama.cpp backend: llama-cpp-python publishes only a source distribution, so `pip install` builds
llama.cpp (6.5 min on 2 idle cores, 25 min under load), which alone put the demo far past a few minutes. xllamacpp's
wheel installs in seconds and runs the same GGUF files.

Greedy text is a function of the prompt alone, as with the llamacpp backend: every prompt is decoded from an empty KV
cache (`cache_prompt` off) in one slot (`n_parallel=1`). llama.cpp's logits depend on how a context was decoded, not
only on its tokens (see `evalsuite.models.llamacpp`), so reusing a slot's cached prefix would make the text depend
on which examples ran before; and decoding several sequences in one batch does too: with four slots, the greedy
continuation of `Question: what is 11 plus 11?` was ` 11` alone and ` 11+11=12` beside three other questions
(Gemma-3-270M). `n_parallel=N` (continuous batching over N slots) is there for throughput on many cores, at that cost.

Stop strings are applied by the server, which drops the matched one; the closing tag whose opening tag is unclosed is
put back (`infer_stop`), as for any server. Token counts and truncation use the model's own tokenizer through the
engine's local HTTP endpoint (127.0.0.1, a port the engine picks), so prompts are cut exactly as llamacpp cuts them.
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Backend, Needs, Generation, GenerationRequest, infer_stop, request_seed
from evalsuite.models.llamacpp import free_cores


class XLlamaCppBackend(Backend):
    """`--backend xllamacpp --model FILE.gguf`; options: n_ctx (per sequence), n_parallel, n_threads, n_gpu_layers."""

    name = "xllamacpp"
    needs = (Needs("xllamacpp", "demo"), Needs("requests", "demo"))
    supports_async = True
    supports_top_p = True
    operational_options = frozenset({"n_threads", "n_threads_batch"})  # as for llamacpp

    def __init__(
        self,
        model: str,
        n_ctx: int = 8192,
        n_parallel: int = 1,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        n_gpu_layers: int = 0,
        seed: int = 0,
    ):
        xllamacpp, requests = self.import_needs()
        if not os.path.isfile(model):
            raise EvalsuiteError(f"GGUF file {model} does not exist", hint="pass --model path/to/model.gguf")
        self.version = getattr(xllamacpp, "__version__", "unknown")
        self.path = model
        self.n_ctx, self.n_parallel = int(n_ctx), int(n_parallel)
        if self.n_ctx < 1 or self.n_parallel < 1:
            raise ValueError("n_ctx and n_parallel must be at least 1")
        # one thread per free core: more threads than free cores stall every step (see free_cores)
        self.n_threads = int(n_threads or free_cores())
        self.n_threads_batch = int(n_threads_batch or self.n_threads)
        params = xllamacpp.CommonParams()
        params.model.path = model
        params.n_ctx = self.n_ctx * self.n_parallel  # the engine splits its context evenly over the slots
        params.n_parallel = self.n_parallel
        params.n_gpu_layers = int(n_gpu_layers)
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads_batch
        params.sampling.seed = int(seed)
        params.cache_prompt = False
        params.warmup = False
        params.verbosity = -1  # the engine logs every request to stderr, where the run's progress line goes
        self.server = xllamacpp.Server(params)
        self.url = str(self.server.listening_address).rstrip("/")
        self._template = _gguf_chat_template(model)
        self._http = requests.Session()  # the tokenizer calls

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        # the engine is thread-safe and queues what its slots cannot take: one thread per slot keeps each one busy
        with ThreadPoolExecutor(max_workers=self.n_parallel) as pool:
            return list(pool.map(self._one, requests))

    async def agenerate(self, request: GenerationRequest) -> Generation:
        return await asyncio.to_thread(self._one, request)

    def _one(self, request: GenerationRequest) -> Generation:
        start = time.perf_counter()
        body: dict[str, Any] = {
            "prompt": request.prompt,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request_seed(request),
            "stop": request.stop,
            "cache_prompt": False,
        }
        if request.top_p is not None:
            body["top_p"] = request.top_p
        try:
            response = self.server.handle_completions(body)
            if "error" in response:  # a prompt longer than the slot's context, a bad parameter
                error = response["error"]
                message = error.get("message", error) if isinstance(error, dict) else error
                return Generation(
                    text="", finish_reason="error", error=str(message), latency_s=time.perf_counter() - start
                )
            choice = response["choices"][0]
            text, finish, usage = choice["text"], choice.get("finish_reason") or "stop", response.get("usage") or {}
        except Exception as exc:  # a decode failure fails this example; the run goes on
            return Generation(
                text="",
                finish_reason="error",
                error=f"{type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - start,
            )
        stop = None
        if finish == "stop":  # a stop string or the end of sequence: the server says only "stop"
            stop = infer_stop(request.prompt + text, request.stop)  # the opening tag may end the prompt
            if stop is None:
                finish = "eos"
            else:
                text += stop
        return Generation(
            text=text,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            finish_reason=finish,
            stop_string=stop,
            latency_s=time.perf_counter() - start,
        )

    def _tokens(self, text: str) -> list[int]:
        answer = self._http.post(
            f"{self.url}/tokenize", json={"content": text, "add_special": False, "parse_special": True}, timeout=60
        )
        answer.raise_for_status()
        return answer.json()["tokens"]

    def count_tokens(self, text: str) -> int:
        return len(self._tokens(text))

    def truncate_tokens(self, text: str, max_tokens: int) -> str:
        tokens = self._tokens(text)
        if len(tokens) <= max_tokens:
            return text
        answer = self._http.post(f"{self.url}/detokenize", json={"tokens": tokens[:max_tokens]}, timeout=60)
        answer.raise_for_status()
        return answer.json()["content"]

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        if not self._template:
            return None  # the engine would fall back to ChatML, which is not this model's format
        answer = self._http.post(f"{self.url}/apply-template", json={"messages": messages}, timeout=60)
        answer.raise_for_status()
        return answer.json()["prompt"]

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "version": self.version,
            "model": self.path,
            "n_ctx": self.n_ctx,
            "n_parallel": self.n_parallel,
            "n_threads": self.n_threads,
            "n_threads_batch": self.n_threads_batch,
            "cache_prompt": False,
        }

    def close(self) -> None:
        self._http.close()
        self.server = None  # the engine stops when its Server object is released


# sizes of GGUF's fixed-size value types (GGUF v2/v3), by type id; 8 is a string, 9 an array
_GGUF_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _gguf_chat_template(path: str) -> str | None:
    """The GGUF's own `tokenizer.chat_template`, or None (Gemma-3-270M base has none).

    Read from the header directly: the `gguf` package's reader parses every field in Python (58 s for Gemma's
    262k-token vocabulary on this machine), while skipping over the values takes well under a second."""
    import mmap
    import struct

    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            return None
        (n_kv,) = struct.unpack_from("<Q", data, 16)
        at = 24

        def string(at: int) -> tuple[bytes, int]:
            (size,) = struct.unpack_from("<Q", data, at)
            return data[at + 8 : at + 8 + size], at + 8 + size

        def skip(kind: int, at: int) -> int:
            if kind == 8:
                return string(at)[1]
            if kind == 9:
                inner, count = struct.unpack_from("<IQ", data, at)
                at += 12
                if inner in _GGUF_SIZES:
                    return at + count * _GGUF_SIZES[inner]
                for _ in range(count):
                    at = skip(inner, at)
                return at
            return at + _GGUF_SIZES[kind]

        for _ in range(n_kv):
            key, at = string(at)
            (kind,) = struct.unpack_from("<I", data, at)
            at += 4
            if key == b"tokenizer.chat_template" and kind == 8:
                return string(at)[0].decode("utf-8")
            at = skip(kind, at)
    return None
