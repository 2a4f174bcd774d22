"""Retrieval benchmark: index build time, queries per second, and supporting-paragraph recall on HotpotQA.

Prints, in one run:
- build time of the BM25 index (bm25s) and of the dense index (all-MiniLM-L6-v2 + faiss Flat);
- queries per second for BM25 in-process, BM25 through the HTTP server (batch 1 and batch 64, server in its own
  process), dense in-process, and rank_bm25 (the common pure-Python BM25) as the reference, with ratios;
- supporting-paragraph recall@3 and all-supporting@3 on hotpotqa.dev_ctx (supporting titles from the row metadata)
  for BM25 and dense.

    python benchmarks/retrieval.py                       # everything, all 1,668 questions
    python benchmarks/retrieval.py --n-questions 200     # quick
    python benchmarks/retrieval.py --dense-index DIR     # reuse a dense index built earlier (its build time is read from it)
    python benchmarks/retrieval.py --no-dense --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVALSUITE_SHARED_DATA", REPO.parent / "shared" / "data"))


def load_questions(path: Path, n: int | None) -> tuple[list[str], list[set[str]]]:
    from evalsuite.retrieval.evaluate import supporting_titles

    questions, titles = [], []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            questions.append(row["question"])
            titles.append(supporting_titles(row.get("metadata") or {}))
            if n is not None and len(questions) >= n:
                break
    return questions, titles


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - started


def best_of(repeat: int, fn, *args):
    """(result, fastest time) over `repeat` runs: the least disturbed by other processes on a shared machine."""
    best = None
    for _ in range(repeat):
        value, seconds = timed(fn, *args)
        best = seconds if best is None else min(best, seconds)
    return value, best


def start_server(index_dir: Path) -> tuple[subprocess.Popen, str]:
    import requests

    process = subprocess.Popen(
        [sys.executable, "-m", "evalsuite", "serve-retriever", "--index", str(index_dir), "--port", "0", "--max-queries", "4096"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()
    if not line.startswith("evalsuite retrieval server:"):
        process.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    url = line.split()[3]
    deadline = time.monotonic() + 120
    while True:
        try:
            requests.get(url.replace("/retrieve", "/health"), timeout=5).raise_for_status()
            return process, url
        except requests.RequestException:
            if time.monotonic() > deadline:
                process.kill()
                raise
            time.sleep(0.1)


class Analyzer:
    """The BM25 index's text processing (lower-case, token pattern, stop words, Snowball stemmer), as token strings."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN

        from evalsuite.retrieval.bm25 import TOKEN_PATTERN

        self.pattern = re.compile(TOKEN_PATTERN)
        self.stop = frozenset(STOPWORDS_EN)
        self.stem = Stemmer.Stemmer("english").stemWord

    def __call__(self, text: str) -> list[str]:
        return [self.stem(w) for w in self.pattern.findall(text.lower()) if w not in self.stop]


def rank_bm25_reference(corpus: Path, questions: list[str], titles: list[set[str]], k: int) -> dict:
    """rank_bm25's BM25Okapi over the same tokens; build time, q/s and recall on the given questions."""
    import numpy as np
    from rank_bm25 import BM25Okapi

    from evalsuite.retrieval import read_corpus
    from evalsuite.retrieval.evaluate import evaluate_supporting
    from evalsuite.retrieval.types import Hit

    analyze = Analyzer()
    docs = list(read_corpus(corpus))
    model, build_s = timed(lambda: BM25Okapi([analyze(d.contents) for d in docs], k1=1.5, b=0.75))
    started = time.perf_counter()
    results = []
    for question in questions:
        scores = model.get_scores(analyze(question))
        top = np.argsort(-scores, kind="stable")[:k]
        results.append([Hit(docs[i].id, docs[i].contents, float(scores[i]), r + 1) for r, i in enumerate(top)])
    seconds = time.perf_counter() - started
    quality = evaluate_supporting(results, titles, k)
    return {"build_s": build_s, "qps": len(questions) / seconds, "questions": len(questions), "recall": quality.recall, "all_supporting": quality.all_supporting}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpus" / "multihop_contexts.jsonl")
    parser.add_argument("--questions", type=Path, default=SHARED / "benchmarks" / "hotpotqa.dev_ctx.jsonl")
    parser.add_argument("--n-questions", type=int, default=None, help="first N questions (default: all 1,668)")
    parser.add_argument("--rank-bm25-questions", type=int, default=100, help="questions timed with rank_bm25 (it is slow)")
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=None, help="where indexes are built (default: a temporary directory)")
    parser.add_argument("--dense", action=argparse.BooleanOptionalAction, default=True, help="build and measure the dense index")
    parser.add_argument("--dense-index", type=Path, default=None, help="reuse this dense index directory instead of building one")
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeat", type=int, default=3, help="time each query pass this many times and keep the fastest")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)

    from evalsuite.retrieval import HttpRetriever, build_index, load_retriever
    from evalsuite.retrieval.evaluate import evaluate_supporting

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="evalsuite-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    questions, titles = load_questions(args.questions, args.n_questions)
    k = args.k
    figures: dict = {"questions": len(questions), "k": k, "repeat": args.repeat, "cpu_count": os.cpu_count(), "load_average_start": os.getloadavg()[0]}
    print(f"corpus {args.corpus.name}; {len(questions)} questions from {args.questions.name}; k={k}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)

    # --- BM25 (bm25s): build, in-process ---
    bm25_dir, build_s = timed(build_index, args.corpus, work / "bm25", overwrite=True)
    bm25 = load_retriever(bm25_dir)
    num_docs = bm25.info()["corpus"]["num_documents"]
    figures["documents"] = num_docs
    figures["bm25_build_s"] = build_s
    print(f"bm25 index: {num_docs} passages built in {build_s:.1f} s", flush=True)
    bm25.search(questions[:10], k)
    bm25_results, seconds = best_of(args.repeat, bm25.search, questions, k)
    figures["bm25_inprocess_qps"] = len(questions) / seconds
    quality = evaluate_supporting(bm25_results, titles, k)
    figures["bm25_recall"], figures["bm25_all_supporting"] = quality.recall, quality.all_supporting
    print(f"bm25 in-process: {figures['bm25_inprocess_qps']:.0f} q/s", flush=True)

    # --- BM25 through the HTTP server (own process) ---
    process, url = start_server(bm25_dir)
    try:
        single = HttpRetriever(url, batch_size=1)
        single.search(questions[:10], k)
        http1, seconds = best_of(args.repeat, single.search, questions, k)
        figures["bm25_http_batch1_qps"] = len(questions) / seconds
        batched = HttpRetriever(url, batch_size=64)
        batched.search(questions[:64], k)
        http64, seconds = best_of(args.repeat, batched.search, questions, k)
        figures["bm25_http_batch64_qps"] = len(questions) / seconds
        figures["http_equals_inprocess"] = http1 == bm25_results and http64 == bm25_results
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(f"bm25 HTTP: batch 1 {figures['bm25_http_batch1_qps']:.0f} q/s, batch 64 {figures['bm25_http_batch64_qps']:.0f} q/s", flush=True)

    # --- rank_bm25 reference ---
    subset = min(args.rank_bm25_questions, len(questions))
    reference = rank_bm25_reference(args.corpus, questions[:subset], titles[:subset], k)
    figures.update({f"rank_bm25_{key}": value for key, value in reference.items()})
    bm25_subset = evaluate_supporting(bm25_results[:subset], titles[:subset], k)
    figures["bm25_recall_on_rank_bm25_subset"] = bm25_subset.recall
    print(f"rank_bm25: {reference['qps']:.1f} q/s on {subset} questions (built in {reference['build_s']:.1f} s)", flush=True)

    # --- dense ---
    if args.dense or args.dense_index:
        if args.dense_index:
            dense_dir = args.dense_index
            dense = load_retriever(dense_dir, device=args.device)
            figures["dense_build_s"] = dense.info()["build"]["seconds"]
            figures["dense_build_reused"] = True
        else:
            dense_dir, build_s = timed(build_index, args.corpus, work / "dense", retriever="dense", encoder=args.encoder, device=args.device, overwrite=True, progress=True)
            dense = load_retriever(dense_dir, device=args.device)
            figures["dense_build_s"] = build_s
        info = dense.info()
        figures["dense_encoder"] = info["params"]["encoder"]["name"]
        figures["dense_faiss"] = info["params"]["faiss"]["factory"]
        dense.search(questions[:10], k)
        dense_results, seconds = best_of(args.repeat, dense.search, questions, k)
        figures["dense_inprocess_qps"] = len(questions) / seconds
        quality = evaluate_supporting(dense_results, titles, k)
        figures["dense_recall"], figures["dense_all_supporting"] = quality.recall, quality.all_supporting

    figures["load_average_end"] = os.getloadavg()[0]
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


def report(f: dict) -> None:
    base = f["bm25_inprocess_qps"]
    lines = [
        "",
        f"Retrieval benchmark: {f['documents']:,} passages, {f['questions']:,} HotpotQA dev questions, k={f['k']}"
        f" ({f['cpu_count']} CPUs; load average {f['load_average_start']:.1f} at start, {f['load_average_end']:.1f} at end)",
        "",
        "index build",
        f"  bm25s                           {f['bm25_build_s']:8.1f} s   ({f['documents'] / f['bm25_build_s']:,.0f} passages/s)",
        f"  rank_bm25 (reference)           {f['rank_bm25_build_s']:8.1f} s",
    ]
    if "dense_build_s" in f:
        reused = " (recorded when it was built)" if f.get("dense_build_reused") else ""
        label = f"dense {f['dense_encoder'].split('/')[-1]} + faiss {f['dense_faiss']}"
        lines.append(f"  {label:<31} {f['dense_build_s']:8.1f} s   ({f['documents'] / f['dense_build_s']:,.1f} passages/s){reused}")
    lines += [
        "",
        f"queries per second (fastest of {f['repeat']} passes)      q/s   ratio",
        f"  bm25s in-process                   {base:10.1f}   1.00x",
        f"  bm25s HTTP server, batch 1         {f['bm25_http_batch1_qps']:10.1f}   {f['bm25_http_batch1_qps'] / base:.2f}x of in-process",
        f"  bm25s HTTP server, batch 64        {f['bm25_http_batch64_qps']:10.1f}   {f['bm25_http_batch64_qps'] / base:.2f}x of in-process"
        f" (goal >= 0.5x: {'met' if f['bm25_http_batch64_qps'] >= 0.5 * base else 'NOT met'})",
        f"  {'rank_bm25 (pure Python, ' + str(f['rank_bm25_questions']) + ' q)':<33}  {f['rank_bm25_qps']:10.1f}   bm25s in-process is {base / f['rank_bm25_qps']:.0f}x faster",
    ]
    if "dense_inprocess_qps" in f:
        lines.append(f"  dense in-process                   {f['dense_inprocess_qps']:10.1f}   {f['dense_inprocess_qps'] / base:.2f}x of bm25s")
    lines += [
        f"  HTTP results identical to in-process: {f['http_equals_inprocess']}",
        "",
        "supporting paragraphs (titles in metadata.supporting_facts)   recall@3   all-supporting@3",
        f"  bm25s                                                         {f['bm25_recall']:.3f}      {f['bm25_all_supporting']:.3f}",
    ]
    if "dense_recall" in f:
        lines.append(f"  dense {f['dense_encoder'].split('/')[-1]:<55} {f['dense_recall']:.3f}      {f['dense_all_supporting']:.3f}")
    label = f"rank_bm25 (first {f['rank_bm25_questions']} questions; bm25s on them: {f['bm25_recall_on_rank_bm25_subset']:.3f})"
    lines.append(f"  {label:<61} {f['rank_bm25_recall']:.3f}      {f['rank_bm25_all_supporting']:.3f}")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
