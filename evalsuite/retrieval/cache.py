"""A persistent retrieval cache (SQLite) keyed by (index hash, query, k): a rerun does no retrieval twice."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from evalsuite.retrieval.types import Hit, Retriever, check_k

_SCHEMA = """
CREATE TABLE IF NOT EXISTS retrieval_cache (
    key TEXT PRIMARY KEY,
    index_hash TEXT NOT NULL,
    k INTEGER NOT NULL,
    query TEXT NOT NULL, -- JSON-encoded
    hits TEXT NOT NULL
)
"""


def cache_key(index_hash: str, query: str, k: int) -> str:
    return hashlib.sha256(json.dumps([index_hash, k, query]).encode("ascii")).hexdigest()


class CachedRetriever:
    """Wraps any `Retriever`; answers repeated (query, k) pairs for the same index from a SQLite file.

    Counters: `underlying_calls` (search calls passed to the wrapped retriever), `underlying_queries` (queries in
    them), `cache_hits` and `cache_misses` (per query). Misses within one call are deduplicated and sent in one
    batched call. Safe to share between threads, and between processes through SQLite's locking.
    """

    def __init__(self, retriever: Retriever, cache_path: str | Path):
        self.retriever = retriever
        self.cache_path = Path(cache_path)
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        info = retriever.info()
        self.index_hash = str(info["index_hash"])
        self._info = info
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.cache_path), check_same_thread=False, timeout=60.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()
        self.underlying_calls = 0
        self.underlying_queries = 0
        self.cache_hits = 0
        self.cache_misses = 0

    def info(self) -> dict[str, Any]:
        return dict(self._info)

    def stats(self) -> dict[str, int]:
        return {
            "underlying_calls": self.underlying_calls,
            "underlying_queries": self.underlying_queries,
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
        }

    def _lookup(self, keys: list[str]) -> dict[str, list[Hit]]:
        found: dict[str, list[Hit]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(
                    f"SELECT key, hits FROM retrieval_cache WHERE key IN ({marks})", chunk
                ).fetchall()
            for key, hits in rows:
                found[key] = [Hit.from_json(h) for h in json.loads(hits)]
        return found

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        k = check_k(k)
        keys = [cache_key(self.index_hash, q, k) for q in queries]
        found = self._lookup(keys)
        missing: dict[str, str] = {}
        for key, query in zip(keys, queries):
            if key not in found and key not in missing:
                missing[key] = query
        with self._lock:
            self.cache_hits += sum(1 for key in keys if key in found)
            self.cache_misses += len(keys) - sum(1 for key in keys if key in found)
        if missing:
            miss_keys = list(missing)
            miss_queries = [missing[key] for key in miss_keys]
            fresh = self.retriever.search(miss_queries, k)
            if len(fresh) != len(miss_queries):
                raise RuntimeError(f"retriever returned {len(fresh)} result lists for {len(miss_queries)} queries")
            rows = [
                (key, self.index_hash, k, json.dumps(query), json.dumps([h.to_json() for h in hits]))
                for key, query, hits in zip(miss_keys, miss_queries, fresh)
            ]
            with self._lock:
                self.underlying_calls += 1
                self.underlying_queries += len(miss_queries)
                self._db.executemany(
                    "INSERT OR REPLACE INTO retrieval_cache (key, index_hash, k, query, hits) VALUES (?,?,?,?,?)", rows
                )
                self._db.commit()
            found.update(zip(miss_keys, fresh))
        return [list(found[key]) for key in keys]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "CachedRetriever":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
