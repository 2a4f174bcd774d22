"""Retrieval: wiki-18 corpora, BM25 (bm25s) and dense (faiss)
indexes, a Search-R1-compatible server, its client, a cache.

    from evalsuite.retrieval import build_index, load_retriever
    build_index("wiki18.jsonl", "indexes/bm25")    # or retriever="dense", encoder="intfloat/e5-base-v2"
    retriever = load_retriever("indexes/bm25")     # or "http://127.0.0.1:8000/retrieve"
    retriever.search(["who wrote big fish"], k=3)  # -> [[Hit(doc_id, contents, score, rank), ...]]
    verify_index("indexes/bm25")                   # rehash every file and the corpus

Heavy dependencies (bm25s, faiss, sentence-transformers, FastAPI) are imported only when used.
"""

from __future__ import annotations

from typing import Any

from evalsuite.retrieval.cache import CachedRetriever
from evalsuite.retrieval.corpus import CorpusReader, read_corpus
from evalsuite.retrieval.index import build_index, import_index, load_retriever
from evalsuite.retrieval.manifest import IndexFormatError, IndexMismatchError, verify_index
from evalsuite.retrieval.types import Document, Hit, Retriever

_LAZY = {
    "BM25Retriever": "evalsuite.retrieval.bm25",
    "DenseRetriever": "evalsuite.retrieval.dense",
    "Encoder": "evalsuite.retrieval.encoders",
    "HttpRetriever": "evalsuite.retrieval.http",
    "RetrievalError": "evalsuite.retrieval.http",
    "RetrievalRequestError": "evalsuite.retrieval.http",
    "create_app": "evalsuite.retrieval.server",
    "ServerLimits": "evalsuite.retrieval.server",
    "ServerThread": "evalsuite.retrieval.server",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'evalsuite.retrieval' has no attribute {name!r}")


__all__ = [
    "BM25Retriever",
    "CachedRetriever",
    "CorpusReader",
    "DenseRetriever",
    "Document",
    "Encoder",
    "Hit",
    "HttpRetriever",
    "IndexFormatError",
    "IndexMismatchError",
    "RetrievalError",
    "RetrievalRequestError",
    "Retriever",
    "ServerLimits",
    "ServerThread",
    "build_index",
    "create_app",
    "import_index",
    "load_retriever",
    "read_corpus",
    "verify_index",
]
