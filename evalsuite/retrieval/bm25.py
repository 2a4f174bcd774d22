"""BM25 on `bm25s` (sparse-matrix scoring): build, save, load and batched search.

Text processing is recorded in the manifest and applied identically to passages and queries: lower-case, the
scikit-learn token pattern `(?u)\\b\\w\\w+\\b`, bm25s's English stop words (Lucene's 33-word list), then the
Snowball English stemmer (PyStemmer). Scoring: bm25s `method="lucene"`, k1=1.5, b=0.75 by default (Pyserini, which
Search-R1's BM25 uses, defaults to k1=0.9, b=0.4: pass those to match it). The `contents` field (title + text)
is what gets indexed, as Pyserini does for wiki-18.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval.corpus import CorpusReader
from evalsuite.retrieval.manifest import (
    IndexMismatchError,
    SavedIndexRetriever,
    base_manifest,
    record_files,
    write_docstore,
    write_manifest,
    OFFSETS_NAME,
)
from evalsuite.retrieval.types import Hit, check_k

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
BM25_DIR = "bm25"
STOPWORDS_FILE = "stopwords.json"
DEFAULTS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene", "stopwords": "en", "stemmer": "english"}


def _stopword_list(stopwords: str | list[str] | None) -> list[str]:
    if stopwords is None or stopwords == "none":
        return []
    if isinstance(stopwords, str):
        from bm25s.stopwords import STOPWORDS_EN

        if stopwords not in ("en", "english"):
            raise EvalsuiteError(f"unknown stop-word list {stopwords!r}", hint="use 'en' or 'none', or pass a list of words")
        return sorted(STOPWORDS_EN)
    return sorted(set(stopwords))


def _stemmer(name: str | None):
    if name is None or name == "none":
        return None
    import Stemmer

    if name not in Stemmer.algorithms():
        raise EvalsuiteError(f"unknown stemmer {name!r}", hint=f"PyStemmer knows: {', '.join(Stemmer.algorithms())}")
    return Stemmer.Stemmer(name)


class QueryTokenizer:
    """Queries to bm25s token ids, exactly as passages were tokenized; words outside the vocabulary are dropped.

    Unlike bm25s's `Tokenizer`, it never grows a vocabulary or a per-word cache, so a long-running server's memory
    stays flat whatever queries arrive (PyStemmer's own cache is bounded).
    """

    def __init__(self, vocab: dict[str, int], stopwords: list[str], stemmer_name: str | None):
        self.vocab = vocab
        self.stopwords = frozenset(stopwords)
        self._pattern = re.compile(TOKEN_PATTERN)
        stemmer = _stemmer(stemmer_name)
        self._stem = stemmer.stemWord if stemmer is not None else (lambda word: word)

    def ids(self, query: str) -> list[int]:
        out: list[int] = []
        for word in self._pattern.findall(query.lower()):
            if word in self.stopwords:
                continue
            sid = self.vocab.get(self._stem(word))
            if sid is not None:
                out.append(sid)
        return out


def build_bm25(
    corpus: str | Path,
    out_dir: str | Path,
    *,
    k1: float = DEFAULTS["k1"],
    b: float = DEFAULTS["b"],
    method: str = DEFAULTS["method"],
    stopwords: str | list[str] | None = DEFAULTS["stopwords"],
    stemmer: str | None = DEFAULTS["stemmer"],
    progress: bool = False,
) -> dict[str, Any]:
    """Index a corpus with bm25s into `out_dir`; returns the written manifest."""
    import bm25s
    from bm25s.tokenization import Tokenizer

    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stop_list = _stopword_list(stopwords)
    tokenizer = Tokenizer(lower=True, splitter=TOKEN_PATTERN, stopwords=stop_list, stemmer=_stemmer(stemmer))
    reader = CorpusReader(corpus)
    contents = (doc.contents for doc in reader)
    stream = tokenizer.streaming_tokenize(contents, update_vocab=True)
    if progress:
        from tqdm import tqdm

        stream = tqdm(stream, total=_count_lines(corpus), desc="tokenize passages", unit="doc")
    token_ids = list(stream)
    if reader.num_documents == 0:
        raise EvalsuiteError(f"corpus {corpus} holds no documents")
    vocab = tokenizer.get_vocab_dict()  # stem -> id (the ids used in token_ids)
    model = bm25s.BM25(k1=k1, b=b, method=method)
    model.index((token_ids, vocab), show_progress=progress)
    bm25_dir = out_dir / BM25_DIR
    if bm25_dir.exists():
        shutil.rmtree(bm25_dir)
    model.save(str(bm25_dir), show_progress=False)
    (bm25_dir / STOPWORDS_FILE).write_text(json.dumps(stop_list), encoding="utf-8")
    write_docstore(out_dir, reader)
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
        "vocabulary_size": len(vocab),
    }
    manifest = base_manifest("bm25", reader, params)
    names = [OFFSETS_NAME] + [f"{BM25_DIR}/{p.name}" for p in sorted(bm25_dir.iterdir()) if p.is_file()]
    record_files(out_dir, manifest, names)
    manifest["build"] = {"seconds": round(time.perf_counter() - started, 3), "documents_per_second": round(reader.num_documents / max(time.perf_counter() - started, 1e-9), 1)}
    return write_manifest(out_dir, manifest)


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def _count_lines(path: str | Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 22), b""))


class BM25Retriever(SavedIndexRetriever):
    """Batched BM25 search over a saved index directory (bm25s arrays memory-mapped)."""

    kind = "bm25"

    def __init__(self, index_dir: str | Path, manifest: dict[str, Any], *, corpus: str | Path | None = None, verify: str = "auto", mmap: bool = True):
        import bm25s

        super().__init__(index_dir, manifest, corpus, verify)
        bm25_dir = self.index_dir / BM25_DIR
        self._model = bm25s.BM25.load(str(bm25_dir), mmap=mmap, load_corpus=False, show_progress=False, verbosity=0)
        num_docs = int(self._model.scores["num_docs"])
        if num_docs != len(self.docstore):
            raise IndexMismatchError(f"{self.index_dir}: the BM25 matrix has {num_docs} documents, the corpus {len(self.docstore)}")
        params = manifest["params"]
        stop_list = json.loads((bm25_dir / STOPWORDS_FILE).read_text(encoding="utf-8"))
        self._tokenizer = QueryTokenizer(self._model.vocab_dict, stop_list, None if params["stemmer"] == "none" else params["stemmer"])

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-`k` passages per query by BM25 score; passages with no query term (score 0) are not returned."""
        kk = min(check_k(k), len(self.docstore))
        results: list[list[Hit]] = []
        with self._lock:
            for query in queries:
                ids = self._tokenizer.ids(query)
                if not ids:
                    results.append([])
                    continue
                scores = self._model.get_scores_from_ids(ids)
                top_rows = top_k_rows(scores, kk)
                results.append(self._hits(top_rows, scores[top_rows]))
        return results

    def _hits(self, rows: Iterable[int], scores: Iterable[float]) -> list[Hit]:
        hits: list[Hit] = []
        for row, score in zip(rows, scores):
            score = float(score)
            if not score > 0.0:
                break
            doc = self.docstore.document(int(row))
            hits.append(Hit(doc_id=doc.id, contents=doc.contents, score=score, rank=len(hits) + 1))
        return hits


def top_k_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the `k` highest scores, best first; ties broken by corpus order (deterministic)."""
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


