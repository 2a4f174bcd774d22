"""BM25 on `bm25s` (sparse-matrix scoring): build, save, load and batched search.

Text processing is recorded in the manifest and applied identically to passages and queries: lower-case, the
scikit-learn token pattern `(?u)\\b\\w\\w+\\b`, bm25s's English stop words (Lucene's 33-word list), then the
Snowball English stemmer (PyStemmer). Scoring: bm25s `method="lucene"` with the defaults of
`bm25_defaults.BM25_DEFAULTS` (Pyserini's, which Search-R1's BM25 uses, differ: see there). The `contents` field
(title + text) is what gets indexed, as Pyserini does for wiki-18. Building is chunked and parallel (`bm25_build`);
the arrays are memory-mapped when served.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from evalsuite.retrieval.bm25_build import (
    DEFAULT_BLOCK_BYTES,
    TOKEN_PATTERN,
    Analyzer,
    build_bm25_files,
    load_stemmer,
    stopword_list,
)
from evalsuite.retrieval.manifest import (
    IndexMismatchError,
    SavedIndexRetriever,
    base_manifest,
    record_files,
    write_docstore,
    write_manifest,
    OFFSETS_NAME,
)
from evalsuite.retrieval.bm25_defaults import BM25_DEFAULTS
from evalsuite.retrieval.types import Hit, check_k

BM25_DIR = "bm25"
STOPWORDS_FILE = "stopwords.json"


class QueryTokenizer:
    """Queries to bm25s token ids, exactly as passages were tokenized; words outside the vocabulary are dropped.

    Unlike bm25s's `Tokenizer`, it never grows a vocabulary, so a long-running server's memory stays flat whatever
    queries arrive (the word-to-stem cache is bounded). Each thread gets its own analyzer (PyStemmer is not
    thread-safe), so concurrent searches need no lock.
    """

    def __init__(self, vocab: dict[str, int], stopwords: list[str], stemmer_name: str | None):
        self.vocab = vocab
        self._stopwords, self._stemmer_name = stopwords, stemmer_name
        self._local = threading.local()
        Analyzer(stopwords, stemmer_name)  # fail now, not in a server thread, on an unknown stemmer

    def ids(self, query: str) -> list[int]:
        analyzer = getattr(self._local, "analyzer", None)
        if analyzer is None:
            analyzer = self._local.analyzer = Analyzer(self._stopwords, self._stemmer_name)
        vocab = self.vocab
        return [vocab[term] for term in analyzer.terms(query) if term in vocab]


def build_bm25(
    corpus: str | Path,
    out_dir: str | Path,
    *,
    k1: float = BM25_DEFAULTS["k1"],
    b: float = BM25_DEFAULTS["b"],
    method: str = BM25_DEFAULTS["method"],
    stopwords: str | list[str] | None = BM25_DEFAULTS["stopwords"],
    stemmer: str | None = BM25_DEFAULTS["stemmer"],
    workers: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: bool = False,
) -> dict[str, Any]:
    """Index a corpus into `out_dir` in blocks, over `workers` processes (default: all cores); returns the manifest.

    Peak memory grows with the index, not with the tokenized corpus (see `bm25_build`); the index equals bm25s's
    in-memory build of the same corpus.
    """
    import bm25s

    started = time.perf_counter()
    out_dir = Path(out_dir)
    stop_list = stopword_list(stopwords)
    stemmer = None if stemmer in (None, "none") else stemmer
    load_stemmer(stemmer)
    bm25_dir = out_dir / BM25_DIR
    if bm25_dir.exists():
        shutil.rmtree(bm25_dir)
    scan, stats = build_bm25_files(
        Path(corpus),
        bm25_dir,
        out_dir,
        k1=k1,
        b=b,
        method=method,
        stopwords=stop_list,
        stemmer=stemmer,
        workers=workers,
        block_bytes=block_bytes,
        progress=progress,
    )
    (bm25_dir / STOPWORDS_FILE).write_text(json.dumps(stop_list), encoding="utf-8")
    write_docstore(out_dir, scan)
    params = {
        "k1": k1,
        "b": b,
        "method": method,
        "tokenizer": {"lower": True, "token_pattern": TOKEN_PATTERN, "field": "contents"},
        "stopwords": "none" if not stop_list else (stopwords if isinstance(stopwords, str) else "custom"),
        "num_stopwords": len(stop_list),
        "stemmer": stemmer or "none",
        "stemmer_library": f"PyStemmer {_version('PyStemmer')}",
        "bm25s_version": bm25s.__version__,
        "vocabulary_size": stats["vocabulary_size"],
    }
    manifest = base_manifest("bm25", scan, params)
    names = [OFFSETS_NAME] + [f"{BM25_DIR}/{p.name}" for p in sorted(bm25_dir.iterdir()) if p.is_file()]
    record_files(out_dir, manifest, names)
    seconds = time.perf_counter() - started
    manifest["build"] = {
        "seconds": round(seconds, 3),
        "documents_per_second": round(scan.num_documents / max(seconds, 1e-9), 1),
        **stats,
    }
    return write_manifest(out_dir, manifest)


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


class BM25Retriever(SavedIndexRetriever):
    """Batched BM25 search over a saved index directory (bm25s arrays memory-mapped)."""

    kind = "bm25"

    def __init__(
        self,
        index_dir: str | Path,
        manifest: dict[str, Any],
        *,
        corpus: str | Path | None = None,
        verify: str = "auto",
        mmap: bool = True,
    ):
        import bm25s

        super().__init__(index_dir, manifest, corpus, verify)
        bm25_dir = self.index_dir / BM25_DIR
        self._model = bm25s.BM25.load(str(bm25_dir), mmap=mmap, load_corpus=False, show_progress=False, verbosity=0)
        self.memory_mapped = mmap
        num_docs = int(self._model.scores["num_docs"])
        if num_docs != len(self.docstore):
            raise IndexMismatchError(
                f"{self.index_dir}: the BM25 matrix has {num_docs} documents, the corpus {len(self.docstore)}"
            )
        params = manifest["params"]
        stop_list = json.loads((bm25_dir / STOPWORDS_FILE).read_text(encoding="utf-8"))
        self._tokenizer = QueryTokenizer(
            self._model.vocab_dict, stop_list, None if params["stemmer"] == "none" else params["stemmer"]
        )

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-`k` passages per query by BM25 score; passages with no query term (score 0) are not returned."""
        kk = min(check_k(k), len(self.docstore))
        results: list[list[Hit]] = []
        # No lock: the arrays are read-only and each thread tokenizes with its own analyzer, so concurrent requests
        # interleave instead of waiting for a whole batch.
        for query in queries:
            ids = self._tokenizer.ids(query)
            if not ids:
                results.append([])
                continue
            scores = self._model.get_scores_from_ids(ids)
            postings = self._postings(ids) if kk > ARGMAX_K else None
            top_rows = top_k_rows(scores, kk, postings, repeats=len(ids))
            results.append(self._hits(top_rows, scores[top_rows]))
        return results

    def _postings(self, ids: list[int]) -> np.ndarray | None:
        """The rows holding each query term, one array after another (a row repeats once per term it holds); None
        when every row has a score (bm25s's BM25L and BM25+ score the terms a passage lacks)."""
        if self._model.nonoccurrence_array is not None:
            return None
        indptr, indices = self._model.scores["indptr"], self._model.scores["indices"]
        return np.concatenate([indices[indptr[term] : indptr[term + 1]] for term in ids])

    def _hits(self, rows: Iterable[int], scores: Iterable[float]) -> list[Hit]:
        hits: list[Hit] = []
        for row, score in zip(rows, scores):
            score = float(score)
            if not score > 0.0:
                break
            doc = self.docstore.document(int(row))
            hits.append(Hit(doc_id=doc.id, contents=doc.contents, score=score, rank=len(hits) + 1))
        return hits


ARGMAX_K = 10  # up to this k, k scans for the maximum beat a partition (3 of 21 M scores: 39 ms against 204 ms)


def top_k_rows(scores: np.ndarray, k: int, postings: np.ndarray | None = None, repeats: int = 1) -> np.ndarray:
    """Rows of the `k` highest scores, best first; ties broken by corpus order (deterministic).

    Up to `ARGMAX_K`, one scan for the maximum per row taken (`scores` is changed meanwhile and restored). Beyond,
    `postings`, the rows that have a score (each listed at most `repeats` times: once per query term it holds), ranks
    those rows only: the same answer as ranking every row when the others score 0, in time that grows with the
    postings instead of the corpus; without them, a partition of every score.
    """
    if k <= ARGMAX_K:
        return top_k_by_argmax(scores, k)
    if postings is not None and postings.shape[0] < scores.shape[0]:
        return top_k_by_postings(scores, k, postings, repeats)
    return top_k_by_partition(scores, k)


def top_k_by_postings(scores: np.ndarray, k: int, postings: np.ndarray, repeats: int) -> np.ndarray:
    """`top_k_rows` among the rows of `postings` (repeats allowed, at most `repeats` of a row)."""
    values = scores[postings]
    enough = k * repeats  # the k best rows fill at most this many entries, so they score >= the enough-th value
    if values.shape[0] > enough:
        floor = np.partition(values, values.shape[0] - enough)[values.shape[0] - enough]
        postings = postings[values >= floor]
    candidates = np.unique(postings)  # ascending rows, so ties still go to the earlier row
    return candidates[top_k_by_partition(scores[candidates], k)]


def top_k_by_argmax(scores: np.ndarray, k: int) -> np.ndarray:
    """`top_k_rows` by k scans for the maximum: argmax returns the earliest of tied rows, as corpus order wants."""
    rows: list[int] = []
    taken: list[float] = []
    try:
        for _ in range(min(k, scores.shape[0])):
            row = int(np.argmax(scores))
            rows.append(row)
            taken.append(scores[row])
            scores[row] = -np.inf
    finally:
        scores[rows] = taken
    return np.asarray(rows, dtype=np.int64)


def top_k_by_partition(scores: np.ndarray, k: int) -> np.ndarray:
    """`top_k_rows` by a partition of every score."""
    if k >= scores.shape[0]:
        candidates = np.arange(scores.shape[0])
    else:
        candidates = np.argpartition(-scores, k - 1)[:k]
        # argpartition keeps an arbitrary subset of rows tied at the k-th score: take the earliest rows instead.
        kth = scores[candidates].min()
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: k - above.shape[0]]
        candidates = np.concatenate([above, tied])
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order]
