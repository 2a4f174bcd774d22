"""The latency model behind `benchmarks/agent_loop.py --only model`: the engine's timing against hand-computed values
on the virtual clock, and both schedules over recorded trajectories against the roofline bound it prints."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # appended: benchmarks/ has scripts named like packages (stats.py, retrieval.py)

from gpu_latency_model import (
    ContinuousBatchingEngine,
    EngineCalibration,
    EngineUsage,
    VirtualClock,
    VirtualClockLoop,
)


def on_virtual_clock(coroutine_function):
    clock = VirtualClock()
    loop = VirtualClockLoop(clock)
    try:
        return loop.run_until_complete(coroutine_function(clock)), clock
    finally:
        loop.close()


def test_a_step_lasts_the_longer_of_its_memory_and_its_compute_time():
    calibration = EngineCalibration(base_s=0.008, kv_token_s=1e-6, token_s=1e-4)
    assert calibration.step_s(1, 1000) == pytest.approx(0.009)  # memory: weights + 1,000 context tokens
    assert calibration.step_s(100, 1000) == pytest.approx(0.010)  # compute: 100 decoded tokens
    assert calibration.step_s(2, 1000, prefilled=500) == pytest.approx(0.0502)  # compute: 502 tokens


def test_sequences_decode_together_and_leave_when_their_tokens_are_done():
    """Two sequences of 3 and 5 tokens with 10 and 20 context tokens: three steps of both, then two of the second.
    Memory time only (1 s + 0.1 s per context token); each stretch costs its first step plus its mean step after."""
    calibration = EngineCalibration(base_s=1.0, kv_token_s=0.1, token_s=0.0)
    finished = {}

    async def run(clock):
        engine = ContinuousBatchingEngine(calibration, EngineUsage())

        async def one(name, tokens, context):
            await engine.decode(tokens, 0, context)
            finished[name] = clock.now

        await asyncio.gather(one("short", 3, 10), one("long", 5, 20))
        engine.task.cancel()
        return engine.usage

    usage, _ = on_virtual_clock(run)
    # stretch 1: n=2, context 30: first step 1 + 3.0; the next two at the mean context 30 + 2*3/2 = 33: 4.3 each
    assert finished["short"] == pytest.approx(4.0 + 2 * 4.3)
    # stretch 2: n=1, context 20 + 3 = 23: first 3.3, then one at 23 + 1*2/2 = 24: 3.4
    assert finished["long"] == pytest.approx(12.6 + 3.3 + 3.4)
    assert (usage.steps, usage.decoded, usage.batch_sizes) == (5, 8, [2, 1])


def test_a_request_arriving_mid_stretch_joins_at_the_next_step_boundary():
    """One sequence decodes 10 tokens at 1 s a step; a second (2 tokens, 7 to prefill) arrives at 2.5 s. The step in
    progress ends at 3 s; from there both decode, the first of these steps also prefilling (compute 9 * 0.5 s)."""
    calibration = EngineCalibration(base_s=1.0, kv_token_s=0.0, token_s=0.5)
    finished = {}

    async def run(clock):
        engine = ContinuousBatchingEngine(calibration, EngineUsage())

        async def one(name, tokens, prefill, delay):
            await asyncio.sleep(delay)
            await engine.decode(tokens, prefill, 0)
            finished[name] = clock.now

        await asyncio.gather(one("first", 10, 0, 0.0), one("late", 2, 7, 2.5))
        engine.task.cancel()
        return engine.usage

    usage, _ = on_virtual_clock(run)
    # 3 steps alone (3 s), then a step of both with 7 prefilled: max(1, 0.5 * 9) = 4.5 s, then one at max(1, 0.5 * 2) = 1 s
    assert finished["late"] == pytest.approx(3.0 + 4.5 + 1.0)
    # the first has 10 - 3 - 2 = 5 tokens left, alone at 1 s each
    assert finished["first"] == pytest.approx(8.5 + 5.0)
    assert usage.prefilled == 7


def test_both_schedules_replay_the_same_trajectories_no_faster_than_the_roofline(trajectories_dir):
    """125 recorded Bamboogle trajectories through the real loop on the model: the same text under both schedules,
    each schedule's engine time at least the roofline bound the benchmark prints, and async not slower than sync."""
    import argparse

    import agent_loop

    recording = trajectories_dir / "bamboogle_2026_04_24_16_17_search_r1_base.json"
    items = [(example["id"], example["question"]) for example in json.loads(recording.read_text())]
    args = argparse.Namespace(step_base_ms=7.79, kv_ns_per_token=46.2, model_params=3.09e9, peak_tflops=312.0,
                              compute_efficiency=0.5, retrieval_per_query_ms=0.2, in_flight_model=32)
    calibration = agent_loop.model_calibration(args)
    runs = agent_loop.play_latency_model(recording, items, calibration, args, retrieval_base_ms=30.0)
    assert agent_loop.same_trajectories(runs["sync"].rollouts, runs["async"].rollouts)
    assert len(runs["sync"].rollouts) == len(items)
    for schedule in ("sync", "async"):
        usage, seconds = runs[schedule].usage, runs[schedule].seconds
        assert usage.decoded == runs["sync"].usage.decoded and usage.prefilled == runs["sync"].usage.prefilled
        assert seconds >= agent_loop.roofline_s(usage, calibration, 32) * (1 - 1e-9)
    assert runs["async"].seconds <= runs["sync"].seconds
