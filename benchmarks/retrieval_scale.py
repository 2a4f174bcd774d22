"""BM25 at scale: build time, peak memory, index size, load time, serving memory, queries/s and the latency of a
training-sized batch through the server, per corpus size, with fitted growth and the extrapolation to wiki-18.

The corpora are DERIVED, not real: each passage is a real passage of ../shared/data/corpus with its title words and
its text words reshuffled, under a fresh id (`s0`, `s1`, ...). They have real passage lengths and real word
frequencies, but the vocabulary of the source passages only (about 100,000 terms), so vocabulary-driven costs are
underestimated against wiki-18 (which has millions of distinct terms). Quality (recall@k) is measured on the real
data only: the real multi-hop corpus and the *_ctx questions' gold paragraphs (`corpus_id`).

Each build runs in a child process (`evalsuite index build`); its peak memory is the largest sum of resident memory
over the build process and its worker processes, sampled every 0.1 s (with psutil). Loading and querying run in
another child.

    python benchmarks/retrieval_scale.py                              # 250k, 500k, 1M, 2M passages
    python benchmarks/retrieval_scale.py --sizes 20000,50000          # quick
    python benchmarks/retrieval_scale.py --work-dir /tmp/scale --keep # keep corpora and indexes for a rerun
    python benchmarks/retrieval_scale.py --probe INDEX_DIR            # (internal) load and query one index, print JSON
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVALSUITE_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI18_PASSAGES = 21_015_324
CTX_FILES = ("hotpotqa.dev_ctx.jsonl", "2wikimultihopqa.dev_ctx.jsonl", "musique.dev_ctx.jsonl")
DEFAULT_SIZES = "250000,500000,1000000,2000000"


def source_passages(corpus_dir: Path) -> list[tuple[list[str], list[str]]]:
    """(title words, text words) of every real passage in the corpus directory."""
    from evalsuite.retrieval import read_corpus

    passages = []
    for path in sorted(corpus_dir.glob("*.jsonl")):
        for doc in read_corpus(path):
            passages.append((doc.title.split(), doc.text.split()))
    return passages


def derive_corpus(sources: list[tuple[list[str], list[str]]], n: int, path: Path, seed: int = 0) -> Path:
    """`n` derived passages: real passages cycled in a seeded random order, words reshuffled, fresh ids."""
    if path.is_file():
        return path
    rng = random.Random(seed)
    order = list(range(len(sources)))
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for i in range(n):
            if i % len(order) == 0:
                rng.shuffle(order)
            title, text = sources[order[i % len(order)]]
            title, text = title[:], text[:]
            rng.shuffle(title)
            rng.shuffle(text)
            handle.write(json.dumps({"id": f"s{i}", "contents": f'"{" ".join(title)}"\n{" ".join(text)}'}, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def tree_memory(process) -> tuple[int, int]:
    """(resident bytes, resident bytes not backed by files) of a process and all its descendants, 0 for those that
    vanished. The second leaves out pages of memory-mapped files (an index being written or served), which are page
    cache the kernel can write back and reclaim, so it is the memory a build or server holds for itself."""
    import psutil

    rss = private = 0
    for proc in [process, *process.children(recursive=True)]:
        try:
            info = proc.memory_info()
        except psutil.Error:
            continue
        rss += info.rss
        private += info.rss - getattr(info, "shared", 0)
    return rss, private


@dataclass
class Measured:
    """What `measure_command` saw of a child command and all its descendants."""

    wall_s: float
    cpu_s: float  # user + system time of the whole process tree
    peak_rss: int  # the largest sum of resident bytes, sampled every 0.1 s
    peak_private: int  # the same without pages of memory-mapped files
    stdout: str


def measure_command(command: list[str], timeout: float) -> Measured:
    """Run a child command to its end, sampling its process tree's memory every 0.1 s."""
    import resource

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    peak_rss = peak_private = 0
    while child.poll() is None:
        rss, private = tree_memory(watched)
        peak_rss, peak_private = max(peak_rss, rss), max(peak_private, private)
        if time.perf_counter() - started > timeout:
            child.kill()
            raise RuntimeError(f"timed out after {timeout:.0f} s: {' '.join(command)}")
        time.sleep(0.1)
    out, err = child.communicate()
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({child.returncode}): {err.strip().splitlines()[-1:] }")
    # a process's children's times include their own waited-for children's: the build's workers are counted
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(wall, cpu, peak_rss, peak_private, out)


def run_measured(command: list[str], timeout: float) -> tuple[float, int, str]:
    """(wall seconds, peak resident bytes of the process tree, stdout) of a child command."""
    measured = measure_command(command, timeout)
    return measured.wall_s, measured.peak_rss, measured.stdout


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def index_figures(index_dir: Path) -> dict:
    """What a BM25 index's manifest says of its build (workers, phases, postings, vocabulary) and its size on disk."""
    manifest = json.loads((index_dir / "index.json").read_text(encoding="utf-8"))
    return {
        "build_workers": manifest["build"]["workers"],
        "count_s": manifest["build"]["count_seconds"],
        "score_s": manifest["build"]["score_seconds"],
        "nonzeros": manifest["build"]["nonzeros"],
        "vocabulary": manifest["params"]["vocabulary_size"],
        "index_bytes": directory_bytes(index_dir),
    }


def load_questions(n: int) -> list[str]:
    questions = []
    with (SHARED / "benchmarks" / "hotpotqa.dev_ctx.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            questions.append(json.loads(line)["question"])
            if len(questions) >= n:
                break
    return questions


def probe(index_dir: Path, n_questions: int) -> dict:
    """Load an index in this (fresh) process and query it: load time, resident memory, queries/s."""
    import psutil

    from evalsuite.retrieval import load_retriever

    me = psutil.Process()
    questions = load_questions(n_questions)
    base = me.memory_info().rss
    started = time.perf_counter()
    retriever = load_retriever(index_dir)
    load_s = time.perf_counter() - started
    after_load = me.memory_info().rss
    retriever.search(questions[:20], 3)
    started = time.perf_counter()
    retriever.search(questions, 3)
    qps = len(questions) / (time.perf_counter() - started)
    return {"load_s": load_s, "rss_base": base, "rss_after_load": after_load, "rss_after_queries": me.memory_info().rss, "qps": qps}


def server_batch(index_dir: Path, batch: int) -> dict:
    """Latency of one `batch`-query request (real questions, repeated) to `serve-retriever` over this index."""
    import psutil
    import requests

    from evalsuite.retrieval.server import ServerLimits

    questions = load_questions(batch)
    queries = [questions[i % len(questions)] for i in range(batch)]
    chars = sum(len(q) for q in queries)
    process = subprocess.Popen(
        [sys.executable, "-m", "evalsuite", "serve-retriever", "--index", str(index_dir), "--port", "0",
         "--max-queries", str(max(batch, 4096)), "--max-request-chars", str(max(chars, ServerLimits.max_request_chars))],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        line = process.stdout.readline()
        url = line.split()[3]
        requests.post(url, json={"queries": queries[:16], "topk": 3}, timeout=600).raise_for_status()
        started = time.perf_counter()
        response = requests.post(url, json={"queries": queries, "topk": 3}, timeout=1200)
        latency = time.perf_counter() - started
        response.raise_for_status()
        answered = len(response.json()["result"])
        rss = psutil.Process(process.pid).memory_info().rss
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {"batch": batch, "answered": answered, "latency_s": latency, "server_rss": rss}


def fit_power(sizes: list[int], values: list[float]) -> tuple[float, float]:
    """(a, b) of value = a * size**b, least squares in log space; b = 1 is linear growth."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(v, 1e-12)) for v in values]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 1.0
    return math.exp(my - b * mx), b


def linear_from_last_two(sizes: list[int], values: list[float]) -> float:
    """The value at wiki-18's size if it keeps growing by the marginal cost between the two largest sizes measured
    (fixed costs such as the interpreter and numpy weigh on a power fit over small sizes)."""
    (n0, v0), (n1, v1) = sorted(zip(sizes, values))[-2:]
    return v1 + (v1 - v0) / (n1 - n0) * (WIKI18_PASSAGES - n1)


def real_quality(work: Path, ks: tuple[int, ...] = (1, 3, 5, 10)) -> dict:
    """BM25 recall@k of the gold paragraphs on the real multi-hop corpus, per *_ctx question file."""
    from evalsuite.retrieval import build_index, load_retriever
    from evalsuite.retrieval.evaluate import gold_passage_ids, passage_recall

    retriever = load_retriever(build_index(SHARED / "corpus" / "multihop_contexts.jsonl", work / "real-bm25", overwrite=True))
    out = {}
    for name in CTX_FILES:
        rows = [json.loads(line) for line in (SHARED / "benchmarks" / name).read_text(encoding="utf-8").splitlines() if line.strip()]
        gold = [gold_passage_ids(row.get("metadata") or {}) for row in rows]
        results = retriever.search([row["question"] for row in rows], max(ks))
        out[name.split(".")[0]] = {"questions": sum(1 for g in gold if g), **{f"recall@{k}": passage_recall(results, gold, k) for k in ks}}
    return out


def measure_size(n: int, sources, work: Path, args) -> dict:
    corpus = derive_corpus(sources, n, work / f"derived-{n}.jsonl", seed=args.seed)
    index_dir = work / f"bm25-{n}"
    command = [sys.executable, "-m", "evalsuite", "index", "build", "--corpus", str(corpus), "-o", str(index_dir), "--no-progress", "--overwrite"]
    if args.workers:
        command += ["--workers", str(args.workers)]
    build_s, peak, _ = run_measured(command, timeout=args.timeout)
    row = {"passages": n, "corpus_bytes": corpus.stat().st_size, "build_s": build_s, "build_peak_rss": peak, **index_figures(index_dir)}
    _, _, out = run_measured([sys.executable, str(Path(__file__).resolve()), "--probe", str(index_dir), "--probe-questions", str(args.questions)], timeout=args.timeout)
    row.update(json.loads(out.strip().splitlines()[-1]))
    if args.batch:
        row.update({f"server_{k}": v for k, v in server_batch(index_dir, args.batch).items()})
    if not args.keep:
        shutil.rmtree(index_dir)
    print(f"  {n:>10,} passages: build {row['build_s']:.1f} s, peak {row['build_peak_rss'] / 2**30:.2f} GiB; "
          f"index {row['index_bytes'] / 2**20:.0f} MiB; load {row['load_s']:.2f} s; {row['qps']:.0f} q/s"
          + (f"; {args.batch}-query batch {row['server_latency_s']:.1f} s" if args.batch else ""), flush=True)
    return row


def report(rows: list[dict], quality: dict | None, cpu_count: int, load_average: float | None = None) -> None:
    sizes = [r["passages"] for r in rows]
    gib, mib = 2**30, 2**20
    print("\nBM25 (bm25s, chunked build) on DERIVED corpora (real passages, words reshuffled, fresh ids)")
    header = f"{'passages':>10} {'build s':>8} {'peak GiB':>9} {'index MiB':>10} {'load s':>7} {'RSS MiB':>8} {'q/s':>7}"
    has_batch = "server_latency_s" in rows[0]
    if has_batch:
        header += f" {'batch of ' + str(rows[0]['server_batch']) + ' s':>16}"
    print(header)
    for r in rows:
        line = (f"{r['passages']:>10,} {r['build_s']:>8.1f} {r['build_peak_rss'] / gib:>9.2f} {r['index_bytes'] / mib:>10.0f}"
                f" {r['load_s']:>7.2f} {(r['rss_after_queries'] - r['rss_base']) / mib:>8.0f} {r['qps']:>7.0f}")
        if has_batch:
            line += f" {r['server_latency_s']:>16.2f}"
        print(line)
    if len(rows) >= 2:
        print(f"\nfitted growth value = a * passages^b, extrapolated to wiki-18 ({WIKI18_PASSAGES:,} passages)")
        # sizes in memory and on disk are steady between runs: their marginal growth is also extrapolated linearly;
        # times on a shared machine are not, and are only fitted
        metrics = [
            ("build time (s)", [r["build_s"] for r in rows], False),
            ("build peak memory (GiB)", [r["build_peak_rss"] / gib for r in rows], True),
            ("index size on disk (GiB)", [r["index_bytes"] / gib for r in rows], True),
            ("load time (s)", [r["load_s"] for r in rows], False),
            ("serving RSS after queries (GiB)", [(r["rss_after_queries"] - r["rss_base"]) / gib for r in rows], True),
            ("seconds per query", [1 / r["qps"] for r in rows], False),
        ]
        if has_batch:
            metrics.append((f"{rows[0]['server_batch']}-query batch (s)", [r["server_latency_s"] for r in rows], False))
        print(f"  {'':<34} {'':<10} {'power fit':>10}  {'marginal growth of the two largest sizes':>41}")
        for name, values, linear in metrics:
            a, b = fit_power(sizes, values)
            marginal = f"{linear_from_last_two(sizes, values):41.2f}" if linear else f"{'-':>41}"
            print(f"  {name:<34} b = {b:5.2f}   {a * WIKI18_PASSAGES ** b:10.2f}  {marginal}")
        count = [r["count_s"] for r in rows]
        score = [r["score_s"] for r in rows]
        ac, bc = fit_power(sizes, count)
        as_, bs = fit_power(sizes, score)
        workers = rows[-1]["build_workers"]
        count_21m, score_21m = ac * WIKI18_PASSAGES**bc, as_ * WIKI18_PASSAGES**bs
        print(f"  build phases at wiki-18 with {workers} workers: counting {count_21m / 60:.1f} min, scoring {score_21m / 60:.1f} min;"
              f" on 16 cores, if counting scales with cores: about {(count_21m * workers / 16 + score_21m) / 60:.0f} min")
    print(f"\n({cpu_count} CPUs; load average {load_average if load_average is not None else os.getloadavg()[0]:.1f} at the end)")
    if quality:
        print("\nquality on REAL data: BM25 over the multi-hop corpus (27,761 passages), gold paragraphs by corpus_id")
        for name, q in quality.items():
            ks = " ".join(f"{key} {value:.3f}" for key, value in q.items() if key.startswith("recall"))
            print(f"  {name:<18} {q['questions']:>5} questions   {ks}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated passage counts")
    parser.add_argument("--work-dir", type=Path, default=None, help="where derived corpora and indexes go (default: a new directory in /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the indexes (derived corpora are always kept in --work-dir)")
    parser.add_argument("--workers", type=int, default=None, help="build worker processes (default: all cores)")
    parser.add_argument("--questions", type=int, default=1000, help="real questions timed per index")
    parser.add_argument("--batch", type=int, default=2560, help="one batch of this many queries through the server (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed per child process")
    parser.add_argument("--no-quality", action="store_true", help="skip the recall measurement on the real corpus")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=None, help="print the tables again from a --json file of an earlier run")
    parser.add_argument("--probe", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--probe-questions", type=int, default=1000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe, args.probe_questions)))
        return {}
    if args.report:
        figures = json.loads(args.report.read_text(encoding="utf-8"))
        report(figures["rows"], figures["quality"], figures["cpu_count"], figures.get("load_average"))
        return figures
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(","))
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="evalsuite-scale-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"derived corpora in {work}: real passages from {SHARED / 'corpus'}, words reshuffled, fresh ids (NOT real data)", flush=True)
    sources = source_passages(SHARED / "corpus")
    if not sources:
        raise SystemExit(f"no passages in {SHARED / 'corpus'}: set EVALSUITE_SHARED_DATA to the shared data directory")
    rows = [measure_size(n, sources, work, args) for n in sizes]
    quality = None if args.no_quality else real_quality(work)
    figures = {"rows": rows, "quality": quality, "cpu_count": os.cpu_count() or 1, "load_average": os.getloadavg()[0]}
    report(rows, quality, figures["cpu_count"], figures["load_average"])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
