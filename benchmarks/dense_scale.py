"""Dense retrieval at wiki-18's size: an IVF-PQ faiss index over 21,015,324 synthetic 768-dimensional vectors.

Encoding wiki-18's 21 M passages with E5 needs a GPU, so the vectors are synthetic, made to look like normalised
sentence embeddings (`SyntheticEmbeddings`): each vector is a shared direction (the anisotropy every sentence encoder
has), plus a point of a Gaussian mixture of 20,000 topic centres (log-normal topic weights) on a random
256-dimensional subspace whose axes' scales fall as a power law, plus isotropic noise in all 768 dimensions,
normalised to unit length. Queries come from the same mixture with more noise (a question is further from its
passages than passages are from each other). At 384 dimensions and 2,000 passages its principal-component spectrum and
passage-pair cosines match all-MiniLM-L6-v2's on real wiki-18 passages; a product quantizer keeps less of its top 10
(recall 0.37 against 0.58), so the recall measured here is pessimistic (`--check-real` prints the comparison). Chunk i
of the stream is generated from the seed and i alone, so the 64 GB of float32 vectors are never held: one 100,000-row
chunk at a time is added to the index and to the exact top-10 of the held-out queries (faiss IndexFlatIP over the
chunk, merged into a running top-10), then dropped. The index's own building is the package's
(`dense_build.new_faiss_index` for the `ivfpq` kind, `dense_build.add_streamed` to add the stream and write the file,
`dense.read_faiss` to load it). The coarse quantizer is trained on vectors drawn from the same distribution (the
stream is i.i.d., so this is a sample of it in law), 40 per list, with 10 k-means iterations.

At milestones of the stream (1 M, 2 M, 5 M, 10 M vectors and the full size) it measures the index built so far:
train + add time (generation and the exact search excluded), peak resident memory of the process, the size of the
index's codes, and for each nprobe: recall@10 against exact search over the same vectors (200 held-out queries),
single-query latency (the queries one at a time) and one 2,560-query batch (Search-R1's 512 prompts x 5 rollouts).
At the end the index is written, reloaded, and its load time and file size reported.

    python benchmarks/dense_scale.py                                   # all 21,015,324 vectors (about 1 hour)
    python benchmarks/dense_scale.py -n 1000000 --json d1m.json        # 1 M
    python benchmarks/dense_scale.py -n 50000 --nlist 256 --pq-m 48   # smoke check, under a minute
    python benchmarks/dense_scale.py --check-real                      # synthetic vs real MiniLM statistics
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.retrieval.dense import read_faiss
from evalsuite.retrieval.dense_build import add_streamed, load_faiss, new_faiss_index

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVALSUITE_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI18_PASSAGES = 21_015_324
E5_DIM = 768
CHUNK_ROWS = 100_000  # part of the vectors' definition: chunk i is generated from (seed, i)
MILESTONES = (1_000_000, 2_000_000, 5_000_000, 10_000_000)
SEARCH_BATCH = 2_560  # Search-R1's trainer: 512 prompts x 5 rollouts
K = 10


@dataclass(frozen=True)
class SyntheticEmbeddings:
    """Deterministic unit vectors shaped like sentence embeddings (see the module's docstring for the recipe).

    The parameters were chosen by a small grid search so that the statistics `embedding_statistics` returns come
    close to all-MiniLM-L6-v2's on 2,000 real wiki-18 passages and 200 NQ questions (`--check-real`).
    """

    dim: int = E5_DIM
    seed: int = 0
    centres: int = 20_000
    latent: int = 256
    decay: float = 0.3  # the latent coordinate j's scale is (j + 1) ** -decay
    spread: float = 0.3  # within-topic standard deviation, in units of the centres' spread
    noise: float = 0.6  # norm of the isotropic noise (the mixture part's expected norm is 1)
    common: float = 0.2  # norm of the direction every vector shares
    query_noise: float = 0.8  # a query's isotropic noise
    _parts: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def _part(self, name: str) -> np.ndarray:
        if not self._parts:
            rng = np.random.default_rng([self.seed, 0])
            basis = np.linalg.qr(rng.standard_normal((self.dim, self.latent)))[0].T
            scales = (1.0 + np.arange(self.latent)) ** -self.decay  # a power-law spectrum, as real embeddings have
            scales /= np.sqrt((scales**2).sum() * (1 + self.spread**2))  # the mixture part's expected norm is 1
            weights = rng.lognormal(0.0, 1.0, self.centres)
            shared = rng.standard_normal(self.dim)
            self._parts.update(
                basis=(basis * scales[:, None]).astype(np.float32),
                centres=rng.standard_normal((self.centres, self.latent)).astype(np.float32),
                cdf=np.cumsum(weights) / weights.sum(),
                shared=(self.common * shared / np.linalg.norm(shared)).astype(np.float32),
            )
        return self._parts[name]

    def _draw(self, rng: np.random.Generator, rows: int, noise: float) -> np.ndarray:
        topics = np.minimum(np.searchsorted(self._part("cdf"), rng.random(rows)), self.centres - 1)
        latent = self._part("centres")[topics]
        latent += self.spread * rng.standard_normal((rows, self.latent), dtype=np.float32)
        vectors = latent @ self._part("basis")
        vectors += (noise / np.sqrt(self.dim)) * rng.standard_normal((rows, self.dim), dtype=np.float32)
        vectors += self._part("shared")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

    def chunk(self, number: int, rows: int = CHUNK_ROWS) -> np.ndarray:
        """Rows number * CHUNK_ROWS onwards of the passage stream."""
        return self._draw(np.random.default_rng([self.seed, 2, number]), rows, self.noise)

    def passages(self, count: int) -> Iterator[np.ndarray]:
        """The first `count` passage vectors, chunk by chunk."""
        for number, start in enumerate(range(0, count, CHUNK_ROWS)):
            yield self.chunk(number, min(CHUNK_ROWS, count - start))

    def queries(self, count: int) -> np.ndarray:
        """Held-out queries: not in the passage stream, drawn from the same topics with more noise."""
        return self._draw(np.random.default_rng([self.seed, 1]), count, self.query_noise)

    def training(self, count: int) -> np.ndarray:
        """A training sample with the passage stream's distribution (the stream is i.i.d.), from its own seed."""
        return self._draw(np.random.default_rng([self.seed, 3]), count, self.noise)


class RunningTopK:
    """The exact top-k by inner product of fixed queries over a stream of vector chunks (faiss IndexFlatIP per chunk,
    merged into the running top-k)."""

    def __init__(self, queries: np.ndarray, k: int = K):
        self.queries = np.ascontiguousarray(queries, dtype=np.float32)
        self.scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        self.ids = np.full((len(queries), k), -1, dtype=np.int64)
        self.seen = 0

    def add(self, vectors: np.ndarray) -> None:
        faiss = load_faiss()
        flat = faiss.IndexFlatIP(vectors.shape[1])
        flat.add(vectors)
        scores, ids = flat.search(self.queries, self.scores.shape[1])
        merged_scores = np.hstack([self.scores, scores])
        merged_ids = np.hstack([self.ids, ids + self.seen])
        best = np.argsort(-merged_scores, axis=1, kind="stable")[:, : self.scores.shape[1]]
        self.scores = np.take_along_axis(merged_scores, best, axis=1)
        self.ids = np.take_along_axis(merged_ids, best, axis=1)
        self.seen += len(vectors)


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """The mean share of each query's exact top-k that the approximate top-k also holds."""
    return float(np.mean([len(set(a[a >= 0]) & set(b)) / len(b) for a, b in zip(found, exact)]))


def peak_rss_gib() -> float:
    """The process's peak resident memory so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def code_bytes(index: Any) -> int:
    """What the index holds in memory: inverted lists (code + 8-byte id a vector), coarse centroids, PQ centroids."""
    faiss = load_faiss()
    ivf = faiss.extract_index_ivf(index)
    pq = faiss.downcast_index(index).pq
    return int(index.ntotal) * (int(ivf.code_size) + 8) + ivf.nlist * index.d * 4 + pq.M * pq.ksub * pq.dsub * 4


def search_figures(index: Any, queries: np.ndarray, exact: RunningTopK, nprobe: int) -> dict[str, float]:
    """Recall@10 against exact search and single-query latency over the held-out queries, and one batch's time."""
    faiss = load_faiss()
    faiss.extract_index_ivf(index).nprobe = nprobe
    held = exact.queries
    latencies, found = [], []
    for query in held:
        began = time.perf_counter()
        _, ids = index.search(query[None, :], K)
        latencies.append(time.perf_counter() - began)
        found.append(ids[0])
    began = time.perf_counter()
    index.search(queries, K)
    batch_s = time.perf_counter() - began
    return {
        "nprobe": nprobe,
        "recall_at_10": recall_at_k(np.array(found), exact.ids),
        "single_ms_p50": 1000 * float(np.median(latencies)),
        "single_ms_p90": 1000 * float(np.percentile(latencies, 90)),
        "batch_s": batch_s,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    faiss = load_faiss()
    faiss.omp_set_num_threads(args.threads)
    vectors = SyntheticEmbeddings(seed=args.seed)
    queries = vectors.queries(max(args.batch, args.queries))
    exact = RunningTopK(queries[: args.queries])
    index, factory, settings = new_faiss_index("ivfpq", E5_DIM, args.n, nlist=args.nlist, pq_m=args.pq_m)
    faiss.extract_index_ivf(index).cp.niter = args.kmeans_iters
    began = time.perf_counter()
    training = vectors.training(40 * args.nlist)
    generate_s = time.perf_counter() - began
    began = time.perf_counter()
    index.train(training)
    train_s = time.perf_counter() - began
    del training
    print(
        f"{factory}: trained on {40 * args.nlist:,} vectors in {train_s:.0f} s "
        f"(load {os.getloadavg()[0]:.1f}, peak {peak_rss_gib():.2f} GiB)",
        flush=True,
    )
    milestones = sorted({m for m in MILESTONES if m < args.n} | {args.n})
    rows: list[dict[str, Any]] = []
    outside = {"generate": 0.0, "exact": 0.0, "measure": 0.0}  # time spent in the stream, not in faiss's add
    stream_end = [0.0]
    add_began = time.perf_counter()

    def timed(part: str, since: float) -> float:
        now = time.perf_counter()
        outside[part] += now - since
        return now

    def stream() -> Iterator[np.ndarray]:
        """The passage chunks; between two chunks, the index holds every chunk yielded so far, so a milestone is
        measured there (add_streamed resumes this generator only after adding the last chunk)."""
        for chunk_vectors in _chunks_with_timing():
            yield chunk_vectors
            if exact.seen in milestones:
                since = time.perf_counter()
                build_s = train_s + (since - add_began) - sum(outside.values())
                row = {
                    "vectors": exact.seen,
                    "train_s": train_s,
                    "build_s": build_s,
                    "peak_rss_gib": peak_rss_gib(),
                    "index_bytes": code_bytes(index),
                    "load_average": os.getloadavg()[0],
                    "search": [search_figures(index, queries, exact, nprobe) for nprobe in args.nprobe],
                }
                rows.append(row)
                print_row(row, flush=True)
                if args.json:  # a run stopped later still leaves the milestones it reached
                    args.json.write_text(json.dumps({"partial": True, "rows": rows}, indent=2) + "\n", encoding="utf-8")
                timed("measure", since)
            elif exact.seen % 1_000_000 == 0:
                print(
                    f"  {exact.seen:,} vectors: {time.perf_counter() - add_began:.0f} s since training, "
                    f"peak {peak_rss_gib():.2f} GiB, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        stream_end[0] = time.perf_counter()

    def _chunks_with_timing() -> Iterator[np.ndarray]:
        for number, start in enumerate(range(0, args.n, CHUNK_ROWS)):
            since = time.perf_counter()
            chunk_vectors = vectors.chunk(number, min(CHUNK_ROWS, args.n - start))
            since = timed("generate", since)
            exact.add(chunk_vectors)
            timed("exact", since)
            yield chunk_vectors

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="evalsuite-dense-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "ivfpq.index"
    add_streamed(index, stream(), path)
    write_s = time.perf_counter() - stream_end[0]  # after the last chunk, add_streamed only writes the file
    held_ids = _search_ids(index, exact.queries, args.nprobe[0])
    index.reset()  # free its lists before loading the file
    began = time.perf_counter()
    loaded = read_faiss(path, mmap=False)
    load_s = time.perf_counter() - began
    same = bool(np.array_equal(_search_ids(loaded, exact.queries, args.nprobe[0]), held_ids))
    figures = {
        "vectors": args.n,
        "dim": E5_DIM,
        "factory": factory,
        "settings": {**settings, "kmeans_iters": args.kmeans_iters, "training_vectors": 40 * args.nlist},
        "generator": {k: v for k, v in vectors.__dict__.items() if not k.startswith("_")},
        "threads": args.threads,
        "held_out_queries": args.queries,
        "batch": args.batch,
        "rows": rows,
        "seconds_outside_faiss": {"generate_training": generate_s, **outside},
        "file_bytes": path.stat().st_size,
        "write_s": write_s,
        "load_s": load_s,
        "reloaded_results_identical": same,
        "peak_rss_gib": peak_rss_gib(),
    }
    if not args.keep:
        path.unlink()
    return figures


def _search_ids(index: Any, queries: np.ndarray, nprobe: int) -> np.ndarray:
    load_faiss().extract_index_ivf(index).nprobe = nprobe
    return index.search(queries, K)[1]


def print_row(row: dict[str, Any], flush: bool = False) -> None:
    for search in row["search"]:
        print(
            f"{row['vectors']:>12,} {row['build_s'] / 60:>8.1f} min {row['peak_rss_gib']:>7.2f} GiB "
            f"{row['index_bytes'] / 2**30:>7.2f} GiB  nprobe {search['nprobe']:>3}  recall@10 "
            f"{search['recall_at_10']:.3f}  single {search['single_ms_p50']:6.1f} ms "
            f"(p90 {search['single_ms_p90']:.1f})"
            f"  batch {search['batch_s']:6.2f} s  (load {row['load_average']:.1f})",
            flush=flush,
        )


def print_report(figures: dict[str, Any]) -> None:
    print(
        f"\n{figures['factory']} over {figures['vectors']:,} synthetic {figures['dim']}-dimensional vectors, "
        f"{figures['threads']} threads; recall against exact search on {figures['held_out_queries']} held-out queries"
    )
    print("     vectors    build        peak    codes")
    for row in figures["rows"]:
        print_row(row)
    print(
        f"index file {figures['file_bytes'] / 2**30:.2f} GiB, written in {figures['write_s']:.1f} s, "
        f"loaded in {figures['load_s']:.1f} s "
        f"(results after reloading identical: {figures['reloaded_results_identical']}); whole-run peak "
        f"{figures['peak_rss_gib']:.2f} GiB; outside faiss: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in figures["seconds_outside_faiss"].items())
    )


def embedding_statistics(passages: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """Shape statistics of unit vectors: mean cosine of passage pairs, quantiles of each query's top-1 and 10th
    cosine over the passages, the variance share of the leading principal components, and the recall@10 a product
    quantizer (dim / 8 sub-quantizers of 4 bits, trained on the passages) keeps against exact search."""
    faiss = load_faiss()
    pairs = passages @ passages.T
    off_diagonal = pairs[~np.eye(len(passages), dtype=bool)]
    scores = queries @ passages.T
    ranked = -np.sort(-scores, axis=1)
    variances = np.linalg.svd(passages - passages.mean(axis=0), compute_uv=False) ** 2
    shares = np.cumsum(variances) / variances.sum()
    quantizer = faiss.IndexPQ(passages.shape[1], passages.shape[1] // 8, 4, faiss.METRIC_INNER_PRODUCT)
    quantizer.train(passages)
    quantizer.add(passages)
    return {
        "pca_share_16": float(shares[15]),
        "pca_share_64": float(shares[63]),
        "pca_share_128": float(shares[127]),
        "pq_recall_at_10": recall_at_k(quantizer.search(queries, K)[1], np.argsort(-scores, axis=1)[:, :K]),
        "passage_pair_cos_mean": float(off_diagonal.mean()),
        "passage_pair_cos_sd": float(off_diagonal.std()),
        "top1_p10": float(np.percentile(ranked[:, 0], 10)),
        "top1_p50": float(np.median(ranked[:, 0])),
        "top1_p90": float(np.percentile(ranked[:, 0], 90)),
        "top10_p50": float(np.median(ranked[:, 9])),
    }


def check_real(passage_count: int, query_count: int) -> dict[str, dict[str, float]]:
    """The statistics of all-MiniLM-L6-v2 embeddings of real wiki-18 passages and NQ questions beside the
    generator's at the same sizes and the model's 384 dimensions (latent dimension scaled with it)."""
    from evalsuite.retrieval.encoders import Encoder

    rng = np.random.default_rng(0)
    lines = (SHARED / "corpus" / "wiki18_sample.jsonl").read_text(encoding="utf-8").splitlines()
    rows = np.sort(rng.choice(len(lines), passage_count, replace=False))
    with (SHARED / "benchmarks" / "nq.test_sub1000.jsonl").open(encoding="utf-8") as handle:
        questions = [json.loads(line)["question"] for line, _ in zip(handle, range(query_count))]
    encoder = Encoder("all-MiniLM-L6-v2", device="cpu")
    real = embedding_statistics(
        encoder.encode_passages([json.loads(lines[i])["contents"] for i in rows]), encoder.encode_queries(questions)
    )
    synthetic_vectors = SyntheticEmbeddings(dim=encoder.dim, latent=SyntheticEmbeddings.latent * encoder.dim // E5_DIM)
    synthetic = embedding_statistics(
        next(synthetic_vectors.passages(passage_count)), synthetic_vectors.queries(query_count)
    )
    print(f"{passage_count:,} passages, {query_count} queries, {encoder.dim} dimensions")
    print(f"{'statistic':<24} {'real (MiniLM)':>14} {'synthetic':>10}")
    for name in real:
        print(f"{name:<24} {real[name]:>14.3f} {synthetic[name]:>10.3f}")
    return {"real": real, "synthetic": synthetic}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=WIKI18_PASSAGES, help="vectors in the index (default: wiki-18's)")
    parser.add_argument("--nlist", type=int, default=4096, help="IVF lists (default 4096; see docs/retrieval.md)")
    parser.add_argument("--pq-m", type=int, default=96, help="PQ code bytes a vector (default 96)")
    parser.add_argument("--nprobe", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--kmeans-iters", type=int, default=10)
    parser.add_argument("--queries", type=int, default=200, help="held-out queries for recall against exact search")
    parser.add_argument("--batch", type=int, default=SEARCH_BATCH)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=None, help="where the index file is written")
    parser.add_argument("--keep", action="store_true", help="keep the index file")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=None, help="print the tables of an earlier --json and stop")
    parser.add_argument("--check-real", action="store_true", help="compare the generator with real MiniLM vectors")
    args = parser.parse_args(argv)
    if args.report:
        figures = json.loads(args.report.read_text(encoding="utf-8"))
        print_report(figures)
        return figures
    if args.check_real:
        return check_real(2_000, 200)
    if args.n < 1 or args.n < args.nlist:
        parser.error(f"-n {args.n} must be at least --nlist {args.nlist}")
    started = os.getloadavg()[0]
    figures = measure(args)
    figures["load_average"] = {"start": started, "end": os.getloadavg()[0]}
    print_report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
