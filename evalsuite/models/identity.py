"""Model identity for the manifest (`evalsuite.provenance.ModelIdentity`): a local file's sha256 (cached by path, size
and mtime) or a local directory's; for a hub model, its repository and commit, read offline from the Hugging Face
cache (the hub names weights by commit, so they are not hashed again)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from evalsuite.cache_usage import hub_cache
from evalsuite.files import cache_root
from evalsuite.files import file_sha256 as sha256_of_file
from evalsuite.provenance import ModelIdentity

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


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


def hub_snapshot(path: Path) -> tuple[str, str] | None:
    """(repository, commit) when `path` is a snapshot folder of the Hugging Face cache
    (`.../models--org--name/snapshots/<commit>`), else None."""
    parts = path.absolute().parts
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--") and _COMMIT.match(parts[-1]):
        return parts[-3].removeprefix("models--").replace("--", "/"), parts[-1]
    return None


def hub_commit(repo: str, revision: str | None = None, cache_dir: Path | None = None) -> str | None:
    """The commit a hub model name (and revision: a branch, tag or commit; default main) resolves to in the local
    Hugging Face cache, without the network; None when it was never downloaded."""
    if revision and _COMMIT.match(revision):
        return revision
    folder = (cache_dir or hub_cache()) / ("models--" + repo.replace("/", "--"))
    try:
        commit = (folder / "refs" / (revision or "main")).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return None
    return commit if _COMMIT.match(commit) else None


def model_identity(spec: str, revision: str | None = None, cache_dir: Path | None = None) -> ModelIdentity:
    """A local file: its sha256. A local directory: its hub repository and commit when it is a snapshot of the
    Hugging Face cache, else a hash over its files. A hub name: its repository and the commit `revision` resolves to
    in the cache (the revision as given when not cached). Anything else (a URL, a served name): the name."""
    path = Path(spec)
    if path.is_file():
        return ModelIdentity(spec=str(path), sha256=cached_file_sha256(path))
    if path.is_dir():
        snapshot = hub_snapshot(path)
        if snapshot is not None:
            return ModelIdentity(spec=str(path), hub_repo=snapshot[0], revision=snapshot[1])
        digest = hashlib.sha256()
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{child.relative_to(path)}\0{cached_file_sha256(child)}\n".encode("utf-8"))
        return ModelIdentity(spec=str(path), sha256=digest.hexdigest())
    if _HUB_NAME.match(spec):
        commit = hub_commit(spec, revision, cache_dir)
        return ModelIdentity(spec=spec, hub_repo=spec if commit else None, revision=commit or revision)
    return ModelIdentity(spec=spec)
