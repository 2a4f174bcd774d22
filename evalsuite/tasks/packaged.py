"""Task data shipped inside the package (e.g. `adqa`): gzipped
JSONL checked by hash, unpacked once into a user cache."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from importlib import resources
from pathlib import Path

from evalsuite.errors import DataError
from evalsuite.files import cache_root, file_sha256
from evalsuite.tasks.registry import Task

MANIFEST = "MANIFEST.json"


def packaged_dir(packaged_data: str) -> Path:
    """'adqa/v1' -> the package folder evalsuite/tasks/adqa/data/v1."""
    name, _, version = packaged_data.partition("/")
    if not name or not version:
        raise ValueError(f"packaged_data must look like 'name/version', got {packaged_data!r}")
    return Path(str(resources.files("evalsuite.tasks").joinpath(name, "data", version)))


def read_manifest(packaged_data: str) -> dict:
    """The release manifest (file hashes, seed, statistics) of a packaged data set."""
    path = packaged_dir(packaged_data) / MANIFEST
    if not path.is_file():
        raise DataError(
            f"{path}: packaged data manifest is missing", hint="reinstall evalsuite (the package data is incomplete)"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def unpacked_file(packaged_data: str, filename: str) -> Path | None:
    """The JSONL behind `<filename>` (e.g. 'test.jsonl.gz'), decompressed into the cache once and checked by hash."""
    manifest = read_manifest(packaged_data)
    entry = manifest["files"].get(filename)
    if entry is None:
        return None
    target = cache_root() / packaged_data / filename.removesuffix(".gz")
    if target.is_file() and file_sha256(target) == entry["jsonl_sha256"]:
        return target
    source = packaged_dir(packaged_data) / filename
    packed = source.read_bytes()
    if hashlib.sha256(packed).hexdigest() != entry["sha256"]:
        raise DataError(
            f"{source}: sha256 does not match {MANIFEST}",
            hint="the installed package data is damaged or was edited; reinstall evalsuite",
        )
    raw = gzip.decompress(packed)
    if hashlib.sha256(raw).hexdigest() != entry["jsonl_sha256"]:
        raise DataError(f"{source}: decompressed content does not match {MANIFEST}", hint="reinstall evalsuite")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename, so concurrent loaders never read a half-written file.
    handle, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(raw)
    os.replace(tmp, target)
    return target


def packaged_split_file(task: Task, split: str) -> Path | None:
    """The readable JSONL of one split of a packaged task, or None when the package has no such split."""
    if task.packaged_data is None:
        return None
    return unpacked_file(task.packaged_data, f"{split}.jsonl.gz")


def packaged_splits(task: Task) -> dict[str, int]:
    """Split name -> row count, from the manifest (the corpus is not a split)."""
    if task.packaged_data is None:
        return {}
    files = read_manifest(task.packaged_data)["files"]
    return {name.removesuffix(".jsonl.gz"): entry["rows"] for name, entry in files.items() if name != "corpus.jsonl.gz"}
