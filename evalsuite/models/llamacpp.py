"""GGUF models in-process through llama-cpp-python (CPU or GPU offload); greedy by default."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, cast

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Backend, Needs, Generation, GenerationRequest, cut_at_stop

if TYPE_CHECKING:
    from llama_cpp.llama_types import ChatCompletionRequestMessage


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


# llama-cpp-python publishes only a source distribution: its install builds llama.cpp (minutes). xllamacpp runs the
# same GGUF files from a prebuilt wheel, so the hint names it first.
LLAMACPP_HINT = (
    '--backend xllamacpp runs the same GGUF from a prebuilt wheel (pip install "evalsuite[demo]"); '
    'llama-cpp-python builds llama.cpp from source: pip install "evalsuite[llamacpp]"'
)


class LlamaCppBackend(Backend):
    """One sequence at a time (llama.cpp's Python API has no batched completion); stops are cut client-side.

    Every prompt is decoded from an empty KV cache, so greedy text is a function of the prompt alone, whatever ran
    before it in the process (batch order, --resume, --shard). llama.cpp's numbers depend on how a context was
    decoded, not only on its tokens. Measured with Gemma-3-270M (greedy, 1 or 2 threads alike): the next-token
    logits of a 478-token prompt decoded in one call and decoded as the 471 tokens it shares with the previous
    question plus 7 differ by up to 0.57; after restoring a KV snapshot of a context longer than Gemma-3's 512-token
    sliding window (llama_state_seq_set_data, or the whole-context state) they differ by up to 0.73 from the live
    context. llama-cpp-python's reuse of the previous call's prefix (and the per-rollout snapshots this backend used
    to keep) therefore made 3 of 6 Bamboogle trajectories change with the order of the examples. Thread count does
    not change the logits.
    """

    name = "llamacpp"
    needs = (Needs("llama_cpp", "llamacpp", LLAMACPP_HINT),)
    supports_top_p = True
    operational_options = frozenset({"n_threads", "n_threads_batch"})  # measured: the logits do not depend on them

    def __init__(
        self,
        model: str,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        n_gpu_layers: int = 0,
        seed: int = 0,
        **options: Any,
    ):
        (llama_cpp,) = self.import_needs()
        if not os.path.isfile(model):
            raise EvalsuiteError(f"GGUF file {model} does not exist", hint="pass --model path/to/model.gguf")
        self.version = getattr(llama_cpp, "__version__", "unknown")
        self.path = model
        self.n_threads = n_threads or free_cores()
        self.n_threads_batch = n_threads_batch or self.n_threads
        self.llm = llama_cpp.Llama(
            model_path=model,
            n_ctx=n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads_batch,
            n_gpu_layers=n_gpu_layers,
            seed=seed,
            verbose=False,
            **options,
        )
        self._template = self.llm.metadata.get("tokenizer.chat_template")

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return [self._one(request) for request in requests]

    def _empty_context(self) -> None:
        """Make the next prompt decode from position 0, never continuing the previous call's context (see above)."""
        self.llm.reset()

    def _one(self, request: GenerationRequest) -> Generation:
        start = time.perf_counter()
        text, pieces, finish = "", 0, "length"
        try:
            self._empty_context()
            # Streamed without server-side stops so the matched stop string stays in the text (Search-R1 keeps it).
            nucleus = {} if request.top_p is None else {"top_p": request.top_p}  # else llama.cpp's default, 0.95
            stream = self.llm.create_completion(
                request.prompt,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                stream=True,
                **nucleus,
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
            return Generation(
                text="",
                finish_reason="error",
                error=f"{type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - start,
            )
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
        # our {"role", "content"} dicts are the shape of llama.cpp's per-role message TypedDicts
        return formatter(messages=cast("list[ChatCompletionRequestMessage]", messages)).prompt

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def truncate_tokens(self, text: str, max_tokens: int) -> str:
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(tokens) <= max_tokens:
            return text
        return self.llm.detokenize(tokens[:max_tokens]).decode("utf-8", "ignore")

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "version": self.version,
            "model": self.path,
            "n_ctx": self.llm.n_ctx(),
            "n_threads": self.n_threads,
            "n_threads_batch": self.n_threads_batch,
        }

    def close(self) -> None:
        close = getattr(self.llm, "close", None)
        if close:
            close()
