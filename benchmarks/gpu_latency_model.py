"""A latency model of a continuous-batching GPU engine, driven through the real rollout loop on a virtual clock.

This is a model, not a GPU measurement. The model text comes from recorded Search-R1 trajectories (the replay
backend); only the time each call would take is modelled:

- A step decodes one token of every active sequence, and prefills the new prompt tokens of the requests that join
  at it: those not already in the engine's prefix cache (vLLM's automatic prefix caching keeps a trajectory's
  previous context and the prompt prefix every trajectory shares). It lasts the longer of its memory time,
  `base_s + kv_token_s * context` (the weights once, plus the KV cache of the `context` tokens the active sequences
  hold), and its compute time, `token_s` per token it processes (decoded plus prefilled): a roofline.
- A request joins at the next step boundary after it arrives and leaves when its recorded turn is decoded.
- Retrieval: a call costs `base_s + per_query_s * queries`, and runs beside the engine.

Time is virtual: `VirtualClockLoop` is an asyncio event loop whose clock jumps to the next timer instead of
sleeping, and whose executor runs a function at once and delivers its result after the virtual time it charged
(`VirtualClock.spend`). The rollout loop's own CPU time (parsing, records) therefore costs no model time.
"""

from __future__ import annotations

import asyncio
import math
import os
import selectors
from dataclasses import dataclass, field
from typing import Any

from evalsuite.models.base import Generation, GenerationRequest, agenerate_batch, approx_token_count
from evalsuite.models.replay import ReplayBackend


class VirtualClock:
    """Model seconds. Work outside the event loop (retrieval) is `spend`-ed: straight onto the clock when nothing
    runs concurrently (the turn-synchronous schedule), or as a delay of the executor call that does it."""

    def __init__(self) -> None:
        self.now = 0.0
        self._deferred: float | None = None

    def spend(self, seconds: float) -> None:
        if self._deferred is not None:
            self._deferred += seconds
        else:
            self.now += seconds


class _JumpingSelector:
    """The loop's selector: waiting for `timeout` seconds moves the virtual clock instead (nothing external arrives)."""

    def __init__(self, inner: selectors.BaseSelector, clock: VirtualClock):
        self.inner, self.clock = inner, clock

    def select(self, timeout: float | None = None) -> list[Any]:
        events = self.inner.select(0)
        if not events and timeout is not None and timeout > 0:
            self.clock.now += timeout
        return events

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock):
        super().__init__()
        self.clock = clock
        self._selector = _JumpingSelector(self._selector, clock)

    def time(self) -> float:
        return self.clock.now

    def run_in_executor(self, executor: Any, func: Any, *args: Any) -> asyncio.Future:
        """Run `func` now, in this thread, and resolve the future after the virtual time it spent."""
        future = self.create_future()
        self.clock._deferred = 0.0
        try:
            outcome, failed = func(*args), False
        except Exception as exc:  # delivered to the awaiting code like a thread's exception
            outcome, failed = exc, True
        finally:
            cost, self.clock._deferred = self.clock._deferred, None

        def deliver() -> None:
            if not future.done():
                future.set_exception(outcome) if failed else future.set_result(outcome)

        self.call_later(cost, deliver)
        return future


@dataclass(frozen=True)
class EngineCalibration:
    base_s: float  # memory time of a step without context: reading the weights, plus the step's fixed overheads
    kv_token_s: float  # memory time per token of context held by the active sequences (their KV cache)
    token_s: float  # compute time per processed token (decoded or prefilled)

    def step_s(self, sequences: int, context: float, prefilled: int = 0) -> float:
        return max(self.base_s + self.kv_token_s * context, self.token_s * (sequences + prefilled))


@dataclass
class _Sequence:
    remaining: int
    prefill: int
    context: int  # tokens in the KV cache when it joins (its whole prompt)
    done: asyncio.Future


@dataclass
class EngineUsage:
    busy_s: float = 0.0  # model seconds with at least one sequence on the engine
    steps: int = 0
    decoded: int = 0
    prefilled: int = 0
    batch_sizes: list[int] = field(default_factory=list)


class ContinuousBatchingEngine:
    """The engine of one event loop: requests join at step boundaries and leave when their tokens are decoded."""

    def __init__(self, calibration: EngineCalibration, usage: EngineUsage):
        self.calibration, self.usage = calibration, usage
        self.waiting: list[_Sequence] = []
        self.active: list[_Sequence] = []
        self.arrived = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def decode(self, tokens: int, prefill: int, context: int) -> None:
        sequence = _Sequence(max(tokens, 1), prefill, context, asyncio.get_running_loop().create_future())
        self.waiting.append(sequence)
        self.arrived.set()
        await sequence.done

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        c = self.calibration
        while True:
            if not self.active and not self.waiting:
                self.arrived.clear()
                await self.arrived.wait()
            prefill = sum(s.prefill for s in self.waiting)
            self.usage.prefilled += prefill
            self.active += self.waiting
            self.waiting = []
            n = len(self.active)
            k = min(s.remaining for s in self.active)
            context = sum(s.context for s in self.active)
            # each step adds one token per sequence to the context: a stretch of k steps costs its mean step
            first = c.step_s(n, context, prefill)
            step = c.step_s(n, context + n * k / 2)
            planned = first + (k - 1) * step
            self.arrived.clear()
            start = loop.time()
            try:
                await asyncio.wait_for(self.arrived.wait(), planned)
                # a request arrived mid-way: finish the step in progress, then let it join
                elapsed = loop.time() - start
                steps = 1 if elapsed < first else min(k, 1 + math.ceil((elapsed - first) / step))
                duration = first + (steps - 1) * step
                await asyncio.sleep(max(0.0, start + duration - loop.time()))
            except TimeoutError:
                steps, duration = k, planned
            self.usage.busy_s += duration
            self.usage.steps += steps
            self.usage.decoded += steps * n
            self.usage.batch_sizes.append(n)
            for sequence in self.active:
                sequence.remaining -= steps
                sequence.context += steps
                if sequence.remaining <= 0:
                    sequence.done.set_result(None)
            self.active = [s for s in self.active if s.remaining > 0]


class ModelledGPUBackend(ReplayBackend):
    """The replay backend's recorded text, timed by `ContinuousBatchingEngine` on the virtual clock.

    `generate` (the turn-synchronous schedule) runs its batch to completion on a fresh virtual loop; `agenerate`
    (the asynchronous schedule) joins the engine of the loop it runs on."""

    name = "modelled-gpu"
    supports_async = True

    def __init__(self, recording: str, clock: VirtualClock, calibration: EngineCalibration):
        super().__init__(recording)
        self.clock, self.calibration = clock, calibration
        self.usage = EngineUsage()
        self._engines: dict[int, ContinuousBatchingEngine] = {}
        self._cached: dict[str, int] = {}  # per trajectory: tokens of context the engine holds from its last turn
        self._first_prompt: str | None = None  # the prompt prefix all trajectories share is cached once

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        loop = VirtualClockLoop(self.clock)
        try:
            return loop.run_until_complete(agenerate_batch(self, requests))
        finally:
            loop.close()

    async def aclose(self) -> None:
        """Stop the engine of the running loop (the rollout loop calls this when its asynchronous run ends)."""
        engine = self._engines.pop(id(asyncio.get_running_loop()), None)
        if engine is not None:
            engine.task.cancel()
            await asyncio.gather(engine.task, return_exceptions=True)

    async def agenerate(self, request: GenerationRequest) -> Generation:
        loop = asyncio.get_running_loop()
        engine = self._engines.get(id(loop))
        if engine is None:
            engine = self._engines[id(loop)] = ContinuousBatchingEngine(self.calibration, self.usage)
        generation = self._one(request)
        prompt_tokens = approx_token_count(request.prompt)
        key = request.key[0] if request.key else ""
        prefill = prompt_tokens - max(self._cached.get(key, 0), self._shared_prefix_tokens(request.prompt))
        tokens = min(generation.completion_tokens or 0, request.max_tokens)
        await engine.decode(tokens, max(prefill, 0), prompt_tokens)
        self._cached[key] = prompt_tokens + tokens
        return generation


    def _shared_prefix_tokens(self, prompt: str) -> int:
        """Tokens of `prompt` in whole 16-token cache blocks of the prefix it shares with the first prompt seen (the
        instruction every trajectory starts with): vLLM's prefix cache holds those blocks once for all."""
        if self._first_prompt is None:
            self._first_prompt = prompt
            return 0
        return approx_token_count(os.path.commonprefix([prompt, self._first_prompt])) // 16 * 16


class ModelledRetriever:
    """The recorded passages (ReplayRetriever), each call costing `base_s + per_query_s * queries` of virtual time."""

    def __init__(self, inner: Any, clock: VirtualClock, base_s: float, per_query_s: float):
        self.inner, self.clock, self.base_s, self.per_query_s = inner, clock, base_s, per_query_s
        self.calls = 0

    def search(self, queries: list[str], k: int) -> list[list[Any]]:
        self.calls += 1
        self.clock.spend(self.base_s + self.per_query_s * len(queries))
        return self.inner.search(queries, k)
