"""Provenance helpers for the manifest: versions, git commit, hardware, hashes, timestamps."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import json
import subprocess
from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import evalsuite


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rows_sha256(rows: Iterable[Any]) -> str:
    """A hash of task rows' content in order (id, question, golden answers, metadata), as canonical JSON lines."""
    digest = hashlib.sha256()
    for row in rows:
        obj = asdict(row) if is_dataclass(row) else row
        digest.update(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return digest.hexdigest()


def git_commit() -> str | None:
    """The commit of the evalsuite source tree, if it is a git checkout."""
    root = Path(evalsuite.__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def hardware() -> dict[str, object]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def base_manifest_fields() -> dict[str, object]:
    """The fields every manifest carries whatever produced it."""
    return {
        "evalsuite_version": evalsuite.__version__,
        "git_commit": git_commit(),
        "created_at": now_iso(),
        "hardware": hardware(),
    }
