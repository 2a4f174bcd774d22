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

from typing import TYPE_CHECKING

from evalsuite import lazy_attributes

if TYPE_CHECKING:  # the same names for type checkers, which do not run __getattr__
    from evalsuite.retrieval.cache import CachedRetriever  # noqa: F401
    from evalsuite.retrieval.corpus import CorpusReader, read_corpus  # noqa: F401
    from evalsuite.retrieval.index import build_index, import_index, load_retriever  # noqa: F401
    from evalsuite.retrieval.manifest import IndexFormatError, IndexMismatchError, verify_index  # noqa: F401
    from evalsuite.retrieval.types import Document, Hit, Retriever  # noqa: F401

# Every name is imported on first use, so a light module of the package (`bm25_defaults`, read by the command line)
# is imported without the indexes, the corpus reader and numpy.
__getattr__ = lazy_attributes(
    __name__,
    {
        "evalsuite.retrieval.cache": ("CachedRetriever",),
        "evalsuite.retrieval.corpus": ("CorpusReader", "read_corpus"),
        "evalsuite.retrieval.index": ("build_index", "import_index", "load_retriever"),
        "evalsuite.retrieval.manifest": ("IndexFormatError", "IndexMismatchError", "verify_index"),
        "evalsuite.retrieval.types": ("Document", "Hit", "Retriever"),
        "evalsuite.retrieval.bm25": ("BM25Retriever",),
        "evalsuite.retrieval.dense": ("DenseRetriever",),
        "evalsuite.retrieval.encoders": ("Encoder",),
        "evalsuite.retrieval.http": ("HttpRetriever", "RetrievalError", "RetrievalRequestError"),
        "evalsuite.retrieval.server": ("create_app", "ServerLimits", "ServerThread"),
    },
)

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
