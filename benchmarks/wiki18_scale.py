"""BM25 at wiki-18's size, measured: build and serve a corpus of `benchmarks/wiki18_corpus.py` (or any corpus file)
at its full size and at its first N passages, and print one table.

Per size: the build (`evalsuite index build --workers W`, in a child process) with its wall time, CPU time of the
whole process tree, peak resident memory of the tree (sampled every 0.1 s, `retrieval_scale.measure_command`), the
same peak without pages of memory-mapped files, and the index's size on disk; then `evalsuite serve-retriever
--workers W` over it: the time until the server prints its URL (the supervisor has loaded the index once) and
until every worker answers, each worker's memory with shared pages counted once (PSS: shared pages split between
the processes that map them; heap: its anonymous memory, from /proc/PID/smaps_rollup; USS counts the pages of the
memory-mapped index that only this worker has touched as its own, so it is printed but not the measure), the
median latency of single-query requests, and one request of
Search-R1's training batch (512 prompts x 5 rollouts = 2,560 queries, k = 3).

The queries are GENERATED in the corpus's vocabulary: real questions share no word with a generated corpus (its
terms are made-up syllable strings), so each query is words of one random passage (seeded), drawn without
replacement, leaving out the corpus's 33 most frequent terms (the counterpart of the 33 English stop words the
analyzer drops from real text), as many words as a real HotpotQA dev question has terms after the analyzer (their
distribution, from ../shared/data when present, else its mean, 11).

    python benchmarks/wiki18_scale.py --corpus /root/wiki18/wiki18_synth.jsonl --sizes 1000000,all \\
        --work-dir /root/wiki18/work --json /root/wiki18/scale.json
    python benchmarks/wiki18_scale.py --report /root/wiki18/scale.json       # the table again
    python benchmarks/wiki18_scale.py --profile INDEX_DIR                    # where a query's time goes
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from retrieval_scale import REPO, SHARED, index_figures, measure_command

STOPWORD_RANKS = 33  # Lucene's English stop-word list, which bm25s and the analyzer use, has 33 words
HOTPOT_MEAN_TERMS = 11


def first_passages(corpus: Path, n: int, path: Path) -> Path:
    """The first n lines of the corpus (a generated corpus's first n passages are the corpus of n)."""
    if path.is_file():
        return path
    partial = path.with_name(path.name + ".partial")
    with corpus.open("rb") as source, partial.open("wb") as out:
        for _, line in zip(range(n), source):
            out.write(line)
    partial.replace(path)
    return path


def query_lengths() -> list[int]:
    """Terms per real HotpotQA dev question after the analyzer (stop words dropped, stemmed)."""
    path = SHARED / "benchmarks" / "hotpotqa.dev_ctx.jsonl"
    if not path.is_file():
        return [HOTPOT_MEAN_TERMS]
    from evalsuite.retrieval.bm25_build import Analyzer, stopword_list

    analyzer = Analyzer(stopword_list("en"), "english")
    with path.open(encoding="utf-8") as handle:
        return [max(1, len(analyzer.terms(json.loads(line)["question"]))) for line in handle if line.strip()]


def generated_queries(corpus: Path, offsets: np.ndarray, count: int, seed: int = 0) -> list[str]:
    """`count` queries in the corpus's vocabulary (see the module's docstring), deterministic from the seed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from wiki18_corpus import term

    frequent = {term(rank) for rank in range(1, STOPWORD_RANKS + 1)}
    lengths = query_lengths()
    rng = random.Random(seed)
    queries = []
    with corpus.open("rb") as handle:
        while len(queries) < count:
            handle.seek(int(offsets[rng.randrange(offsets.shape[0])]))
            text = json.loads(handle.readline())["contents"].split("\n", 1)[-1]
            words = [w for w in dict.fromkeys(text.split()) if w not in frequent]
            if words:
                queries.append(" ".join(rng.sample(words, min(len(words), rng.choice(lengths)))))
    return queries


def evalsuite_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalsuite", *args]


def build(corpus: Path, index_dir: Path, workers: int, timeout: float) -> dict:
    """Build the index in a child process and measure it (the manifest adds the phases and the index's shape)."""
    command = evalsuite_command(
        "index", "build", "--corpus", str(corpus), "-o", str(index_dir), "--workers", str(workers),
        "--no-progress", "--overwrite",
    )  # fmt: skip
    measured = measure_command(command, timeout)
    return {
        "passages": json.loads((index_dir / "index.json").read_text(encoding="utf-8"))["corpus"]["num_documents"],
        "corpus_bytes": corpus.stat().st_size,
        "build_s": measured.wall_s,
        "build_cpu_s": measured.cpu_s,
        "build_peak_rss": measured.peak_rss,
        "build_peak_private": measured.peak_private,
        **index_figures(index_dir),
    }


def _post(url: str, queries: list[str], timeout: float) -> tuple[float, list]:
    import requests

    started = time.perf_counter()
    response = requests.post(url, json={"queries": queries, "topk": 3}, timeout=timeout)
    seconds = time.perf_counter() - started
    response.raise_for_status()
    return seconds, response.json()["result"]


def _wait_for_workers(url: str, workers: int, timeout: float) -> set[int]:
    """The process ids of `workers` distinct worker processes, once each has answered /info (each new connection
    goes to a ready one)."""
    import requests

    info_url = url.rsplit("/", 1)[0] + "/info"
    seen: set[int] = set()
    deadline = time.perf_counter() + timeout
    while len(seen) < workers:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"only {len(seen)} of {workers} workers answered within {timeout:.0f} s")
        with requests.Session() as session:  # a fresh connection each time
            seen.add(session.get(info_url, timeout=timeout).json()["server"]["worker_pid"])
        time.sleep(0.05)
    return seen


def smaps_rollup(pid: int) -> dict[str, int]:
    """A process's memory by kind in bytes (Linux): `Anonymous` is its own heap, `Pss_File` its share of the file
    pages it maps (the memory-mapped index and corpus, page cache shared with every process that maps them)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) << 10
    return fields


def serve(index_dir: Path, queries: list[str], workers: int, single: int, timeout: float) -> dict:
    """Serve the index with `workers` processes and measure loading, memory and latency (see the docstring)."""
    import psutil

    chars = sum(len(q) for q in queries)
    command = evalsuite_command(
        "serve-retriever", "--index", str(index_dir), "--port", "0", "--workers", str(workers),
        "--max-queries", str(max(len(queries), 4096)), "--max-request-chars", str(max(chars, 512 * 1024)),
    )  # fmt: skip
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[3]
        announced = time.perf_counter() - started
        worker_pids = _wait_for_workers(url, workers, timeout)
        ready = time.perf_counter() - started
        single_s = [_post(url, [query], timeout)[0] for query in queries[:single]]
        batch_s, result = _post(url, queries, timeout)
        answered = sum(1 for hits in result if hits)
        supervisor = psutil.Process(process.pid)
        memory = [psutil.Process(pid).memory_full_info() for pid in sorted(worker_pids)]
        kinds = [smaps_rollup(pid) for pid in sorted(worker_pids)]
        supervisor_memory = supervisor.memory_full_info()
    finally:
        process.terminate()
        process.wait(timeout=60)
    return {
        "server_workers": workers,
        "announce_s": announced,
        "ready_s": ready,
        "worker_uss": [m.uss for m in memory],
        "worker_pss": [m.pss for m in memory],
        "worker_rss": [m.rss for m in memory],
        "worker_anonymous": [k["Anonymous"] for k in kinds],
        "worker_pss_file": [k["Pss_File"] for k in kinds],
        "supervisor_uss": supervisor_memory.uss,
        "single_query_s": statistics.median(single_s),
        "single_queries": len(single_s),
        "batch": len(queries),
        "batch_s": batch_s,
        "batch_answered": answered,
    }


def profile(index_dir: Path, count: int) -> dict:
    """Where a query's time goes in this process: tokenizing, scoring (bm25s), the top 3 (as search takes it, and
    the two ways it took it before: among the postings, and by a partition of every passage's score), reading the
    passages. The three ways must agree."""
    from evalsuite.retrieval import load_retriever
    from evalsuite.retrieval.bm25 import top_k_by_partition, top_k_by_postings, top_k_rows

    started = time.perf_counter()
    retriever = load_retriever(index_dir)
    load_s = time.perf_counter() - started
    offsets = np.load(index_dir / "docstore.offsets.npy", mmap_mode="r")
    queries = generated_queries(retriever.docstore.path, offsets, count, seed=1)
    names = ("tokenize", "score", "top 3", "top 3 among the postings", "top 3 by a partition", "passages")
    phases = dict.fromkeys(names, 0.0)
    postings = 0
    for query in queries:
        times = [time.perf_counter()]
        ids = retriever._tokenizer.ids(query)
        times.append(time.perf_counter())
        scores = retriever._model.get_scores_from_ids(ids)
        times.append(time.perf_counter())
        rows = top_k_rows(scores, 3)
        times.append(time.perf_counter())
        touched = retriever._postings(ids)
        assert touched is not None
        by_postings = top_k_by_postings(scores, 3, touched, len(ids))
        times.append(time.perf_counter())
        by_partition = top_k_by_partition(scores, 3)
        times.append(time.perf_counter())
        retriever._hits(rows, scores[rows])
        times.append(time.perf_counter())
        assert np.array_equal(rows, by_postings) and np.array_equal(rows, by_partition)
        postings += touched.shape[0]
        for name, start, end in zip(names, times, times[1:]):
            phases[name] += end - start
    return {
        "load_s": load_s,
        "queries": count,
        "postings_per_query": postings / count,
        "ms_per_query": {name: 1000 * seconds / count for name, seconds in phases.items()},
        "load_average": os.getloadavg()[0],
    }


def report(rows: list[dict], load_average: float) -> None:
    gib, mib = 2**30, 2**20
    print("\nBM25 over a GENERATED wiki-18-shaped corpus (benchmarks/wiki18_corpus.py), generated queries")
    print(
        f"{'passages':>11} {'vocabulary':>11} {'build':>8} {'CPU':>8} {'peak GiB':>9} {'private':>8} {'index GiB':>9}"
        f" {'ready s':>8} {'heap/worker MiB':>15} {'PSS/worker MiB':>15} {'1 query ms':>10} {'batch s':>8} {'q/s':>6}"
    )
    for r in rows:
        heap = "/".join(f"{u / mib:.0f}" for u in r.get("worker_anonymous", []))
        pss = "/".join(f"{p / mib:.0f}" for p in r.get("worker_pss", []))
        served = (
            f" {r['ready_s']:>8.1f} {heap:>15} {pss:>15} {1000 * r['single_query_s']:>10.0f} {r['batch_s']:>8.1f}"
            f" {r['batch'] / r['batch_s']:>6.0f}"
            if "batch_s" in r
            else ""
        )
        print(
            f"{r['passages']:>11,} {r['vocabulary']:>11,} {r['build_s'] / 60:>6.1f} m {r['build_cpu_s'] / 60:>6.1f} m"
            f" {r['build_peak_rss'] / gib:>9.2f} {r['build_peak_private'] / gib:>8.2f} {r['index_bytes'] / gib:>9.2f}"
            + served
        )
    for r in rows:
        print(
            f"  {r['passages']:,} passages: counting {r['count_s'] / 60:.1f} min, scoring {r['score_s'] / 60:.1f} min"
            f" ({r['build_workers']} workers); {r['nonzeros']:,} postings; corpus {r['corpus_bytes'] / gib:.2f} GiB"
            + (
                f"; URL after {r['announce_s']:.1f} s; per worker USS "
                + "/".join(f"{u / mib:.0f}" for u in r["worker_uss"])
                + " MiB, index and corpus pages (PSS of files) "
                + "/".join(f"{u / mib:.0f}" for u in r.get("worker_pss_file", []))
                + f" MiB; supervisor USS {r['supervisor_uss'] / mib:.0f} MiB"
                if "announce_s" in r
                else ""
            )  # fmt: skip
        )
    print(f"({os.cpu_count()} CPUs; load average {load_average:.1f} at the end)")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="the corpus file (e.g. benchmarks/wiki18_corpus.py's output)")
    parser.add_argument("--sizes", default="1000000,all", help="passage counts, comma-separated; 'all' = the file")
    parser.add_argument("--work-dir", type=Path, help="where the prefix corpora and the indexes go")
    parser.add_argument("--workers", type=int, default=2, help="build and server worker processes")
    parser.add_argument("--batch", type=int, default=2560, help="queries in the training-sized request")
    parser.add_argument("--single", type=int, default=20, help="single-query requests timed (the median is shown)")
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="seconds allowed per build or request")
    parser.add_argument("--skip-build", action="store_true", help="serve indexes already in --work-dir")
    parser.add_argument("--json", type=Path, help="write the figures here (and after each size)")
    parser.add_argument("--report", type=Path, help="print the table again from a --json file")
    parser.add_argument("--profile", type=Path, metavar="INDEX_DIR", help="time a query's phases over this index")
    parser.add_argument("--profile-queries", type=int, default=200)
    args = parser.parse_args(argv)
    if args.report:
        figures = json.loads(args.report.read_text(encoding="utf-8"))
        report(figures["rows"], figures["load_average"])
        return figures
    if args.profile:
        result = profile(args.profile, args.profile_queries)
        print(json.dumps(result, indent=2))
        return result
    if args.corpus is None or args.work_dir is None:
        parser.error("--corpus and --work-dir are required to measure")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for size in args.sizes.split(","):
        if size == "all":
            corpus, name = args.corpus, "all"
        else:
            n = int(size.replace("_", ""))
            corpus, name = first_passages(args.corpus, n, args.work_dir / f"first-{n}.jsonl"), str(n)
        index_dir = args.work_dir / f"bm25-{name}"
        print(f"{name}: building {index_dir} from {corpus} ({time.strftime('%H:%M:%S')})", flush=True)
        if args.skip_build:
            row = json.loads((index_dir / "build.json").read_text(encoding="utf-8"))
        else:
            row = build(corpus, index_dir, args.workers, args.timeout)
            (index_dir / "build.json").write_text(json.dumps(row) + "\n", encoding="utf-8")
        print(f"  built: {json.dumps(row)}", flush=True)
        offsets = np.load(index_dir / "docstore.offsets.npy", mmap_mode="r")
        queries = generated_queries(corpus, offsets, args.batch)
        row.update(serve(index_dir, queries, args.workers, args.single, args.timeout))
        print(f"  served: {json.dumps(row)}", flush=True)
        rows.append(row)
        figures = {"rows": rows, "load_average": os.getloadavg()[0], "cpu_count": os.cpu_count()}
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    figures = {"rows": rows, "load_average": os.getloadavg()[0], "cpu_count": os.cpu_count()}
    report(rows, figures["load_average"])
    return figures


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
