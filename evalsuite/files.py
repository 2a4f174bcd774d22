"""Files shared by every part: content hashes for provenance, atomic replacement and the user cache directory."""

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


def fsync_directory(path: Path) -> None:
    """Make a rename inside `path` durable (not every filesystem lets a directory be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temporary_path(path: Path) -> Path:
    """Where an atomic rewrite of `path` is prepared (one writer per file; a leftover is overwritten)."""
    return path.with_name(path.name + ".tmp")


def replace_atomically(path: Path, data: bytes) -> None:
    """Replace `path` by `data`: a temporary file beside it, fsynced, then renamed over it, so a kill or a full disk
    at any point leaves either the old file or the new one. An OSError propagates after the temporary file is
    removed (the old file is untouched)."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb", buffering=0) as handle:
            view = memoryview(data)
            while view:  # a raw write may take only part of the bytes
                view = view[handle.write(view) :]
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def cache_root() -> Path:
    """Where evalsuite caches derived files (indexes, unpacked data, hashes): $EVALSUITE_CACHE_DIR, else
    $XDG_CACHE_HOME/evalsuite, else ~/.cache/evalsuite."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalsuite"
