"""Rollout-loop overhead: harness and retrieval time per example and per turn, and batched vs one-at-a-time turns.

    python benchmarks/agent_loop.py [--index DIR] [--sleep 0.05] [--n-sleep 128]

1. The replay backend (zero model time) over the 1,000 recorded NQ Search-R1 trajectories, with (a) the recorded
   passages (harness only) and (b) live in-process BM25 over ../shared/data/corpus/wiki18_sample.jsonl.
2. A backend that sleeps a fixed time per call whatever the batch size (the shape of GPU batching): one batch per
   turn against one call per trajectory.
3. The harness + retrieval time per trajectory-turn against the model time of a realistic GPU turn. Assumption:
   Qwen2.5-3B under vLLM on one A100 generates about 5,000 tokens/s aggregated over a batch of 256 trajectories, and a
   Search-R1 turn generates about 120 tokens, so one trajectory-turn costs 120 / 5,000 s = 24 ms of model time.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.agent.runner import Example, to_record
from evalsuite.models.replay import ReplayBackend
from evalsuite.retrieval.replay import ReplayRetriever
from evalsuite.tasks import TaskRow

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=Path("/tmp/evalsuite-bench/bm25-wiki18"))
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--sleep", type=float, default=0.05, help="seconds per backend call in the batching test")
    parser.add_argument("--n-sleep", type=int, default=128, help="trajectories in the batching test")
    args = parser.parse_args()

    from evalsuite.retrieval import build_index, load_retriever

    recorded = json.loads(RECORDING.read_text())
    items = [(x["id"], x["question"].strip() + "?") for x in recorded]
    backend = ReplayBackend(str(RECORDING))

    # 1a. harness only: replayed model text, recorded passages
    replay_retriever = Timed(ReplayRetriever(backend.examples))
    t_replay, rollouts = run(backend, replay_retriever, items, args.batch_size)
    turns = sum(len(r.turns) for r in rollouts)
    harness = t_replay - replay_retriever.seconds
    method = get_method("search-r1")
    start = time.perf_counter()
    for x, r in zip(recorded, rollouts):
        to_record(Example("nq", "test", 0, TaskRow(x["id"], x["question"], x["golden_answers"])), r, method).model_dump_json()
    t_record = time.perf_counter() - start
    print(f"replay, recorded passages: {len(items)} examples, {turns} turns, {t_replay:.2f} s")
    print(f"  harness per example {harness / len(items) * 1e3:.3f} ms, per turn {harness / turns * 1e3:.3f} ms")
    print(f"  scoring + record serialisation per example {t_record / len(items) * 1e3:.3f} ms")

    # 1b. live in-process BM25 over wiki18_sample (10,813 passages)
    if not (args.index / "index.json").exists():
        build_index(SHARED / "corpus" / "wiki18_sample.jsonl", args.index)
    bm25 = Timed(load_retriever(args.index))
    t_bm25, rollouts = run(backend, bm25, items, args.batch_size)
    turns_bm25 = sum(len(r.turns) for r in rollouts)
    searches = sum(1 for r in rollouts for t in r.turns if t.query is not None)
    harness_bm25 = t_bm25 - bm25.seconds
    print(f"replay + in-process BM25: {t_bm25:.2f} s; retrieval {bm25.seconds:.2f} s in {bm25.calls} batched calls for {searches} queries")
    print(f"  retrieval per query {bm25.seconds / max(searches, 1) * 1e3:.3f} ms; harness per turn {harness_bm25 / turns_bm25 * 1e3:.3f} ms")
    per_turn = (t_bm25 + t_record) / turns_bm25
    print(f"  harness + retrieval + scoring per trajectory-turn {per_turn * 1e3:.3f} ms")
    print(f"  = {per_turn / GPU_TURN_S * 100:.2f}% of a {GPU_TURN_S * 1e3:.0f} ms GPU trajectory-turn (goal < 2%)")

    # 2. batched vs one-at-a-time with a fixed sleep per backend call
    sleepy = ReplayBackend(str(RECORDING), delay_s=args.sleep)
    subset = items[: args.n_sleep]
    t_batched, _ = run(sleepy, ReplayRetriever(backend.examples), subset, len(subset))
    t_single, _ = run(sleepy, ReplayRetriever(backend.examples), subset, 1)
    print(f"sleeping backend ({args.sleep * 1e3:.0f} ms per call), {len(subset)} trajectories:")
    print(f"  one batch per turn {t_batched:.2f} s, one call per trajectory-turn {t_single:.2f} s, speed-up {t_single / t_batched:.1f}x")


if __name__ == "__main__":
    main()
