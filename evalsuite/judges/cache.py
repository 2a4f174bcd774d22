"""Persistent judge cache (SQLite): a reply is keyed by judge
model, prompt-template hash and input, so reruns cost nothing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    template_hash TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(model: str, template_hash: str, messages: list[dict[str, str]], settings: dict[str, object]) -> str:
    """Stable key of one request; `settings` holds the decoding options that change the reply (max_tokens, format)."""
    payload = json.dumps([model, template_hash, messages, settings], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    text: str
    prompt_tokens: int
    completion_tokens: int


class JudgeCache:
    """A SQLite file of judge replies; safe to share between the coroutines of one process."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._db.commit()

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens FROM replies WHERE key = ?", (key,)
            ).fetchone()
        return CachedReply(*row) if row else None

    def put(self, key: str, model: str, template_hash: str, reply: CachedReply) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, template_hash, reply.text, reply.prompt_tokens, reply.completion_tokens, time.time()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
