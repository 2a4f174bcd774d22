"""Model identity for the manifest: a file's sha256 (cached by path, size and mtime), a directory's, or a hub name."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from evalsuite.files import cache_root
from evalsuite.files import file_sha256 as sha256_of_file


def _cache_file() -> Path:
    return cache_root() / "file_hashes.json"


def cached_file_sha256(path: Path) -> str:
    """sha256 of a file, cached so a multi-GB checkpoint is hashed once per change."""
    path = path.resolve()
    stat = path.stat()
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
    cache: dict[str, str] = {}
    try:
        cache = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    if key in cache:
        return cache[key]
    cache[key] = sha256_of_file(path)
    try:
        _cache_file().parent.mkdir(parents=True, exist_ok=True)
        tmp = _cache_file().with_suffix(".tmp")
        tmp.write_text(json.dumps(cache), encoding="utf-8")
        os.replace(tmp, _cache_file())
    except OSError:
        pass  # a read-only home only costs re-hashing next time
    return cache[key]


def model_identity(spec: str) -> dict[str, str]:
    """`{"spec", "sha256"}` for a local file or directory (hash over its files), `{"spec"}` for a hub name or URL."""
    path = Path(spec)
    if path.is_file():
        return {"spec": str(path), "sha256": cached_file_sha256(path)}
    if path.is_dir():
        digest = hashlib.sha256()
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{child.relative_to(path)}\0{cached_file_sha256(child)}\n".encode("utf-8"))
        return {"spec": str(path), "sha256": digest.hexdigest()}
    return {"spec": spec}
