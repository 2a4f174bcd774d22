"""Files shared by every part: content hashes for provenance and the user cache directory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CACHE_ENV = "EVALSUITE_CACHE_DIR"


def file_sha256(path: str | Path, chunk_size: int = 1 << 22) -> str:
    """The sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_root() -> Path:
    """Where evalsuite caches derived files (indexes, unpacked data, hashes): $EVALSUITE_CACHE_DIR, else
    $XDG_CACHE_HOME/evalsuite, else ~/.cache/evalsuite."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalsuite"
