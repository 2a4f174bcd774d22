"""Provenance: what produced a record and from what.

`Provenance` is who made it: the evalsuite version, the source commit and whether the checkout had uncommitted
changes, when, on which machine, and (where it matters) the versions of the libraries that did the work. Every
record evalsuite writes carries its fields flat, under the same names: a run's `manifest.json`, an index's
`index.json`, a training run's `train_manifest.json`, a submission's `submission.json` and a leaderboard entry's
`verification.json`. Records written before a field existed still load (the field reads as None or empty).

The other records say what a result was made from: `ModelIdentity` (a local file's or directory's sha256, a hub
model's commit), `DataFile` (a task file's hash and the hash of the rows evaluated) and `CorpusRecord` (the corpus
an index was built from).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

import evalsuite


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rows_sha256(rows: Iterable[Any]) -> str:
    """A hash of task rows' content in order (id, question, golden answers, metadata), as canonical JSON lines."""
    digest = hashlib.sha256()
    for row in rows:
        obj = asdict(row) if is_dataclass(row) and not isinstance(row, type) else row
        digest.update(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return digest.hexdigest()


class GitCommit(NamedTuple):
    """The commit a source tree is at, and whether tracked files differ from it."""

    sha: str
    dirty: bool


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit(root: str | Path | None = None) -> GitCommit | None:
    """The commit of the evalsuite source tree (or of `root`), when it is the top of a git checkout.

    An installed package inside some other repository (a virtual environment in a project folder) is not a checkout
    of evalsuite, so only a tree whose own top level is `root` counts.
    """
    root = Path(root) if root is not None else Path(evalsuite.__file__).resolve().parent.parent
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != root.resolve():
        return None
    sha = (_git(root, "rev-parse", "HEAD") or "").strip()
    if not sha:
        return None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return GitCommit(sha, bool(status and status.strip()))


class Hardware(BaseModel):
    """The machine a record was made on; older records may hold other keys."""

    model_config = ConfigDict(extra="allow")

    platform: str | None = None
    python: str | None = None
    machine: str | None = None
    cpu_count: int | None = None
    # CUDA devices, when torch is already loaded (recording them never imports torch).
    accelerators: list[str] = Field(default_factory=list)


def _accelerators() -> list[str]:
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    try:
        return (
            [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if torch.cuda.is_available()
            else []
        )
    except (RuntimeError, AssertionError):  # a broken driver must not stop a run from recording the rest
        return []


def hardware() -> Hardware:
    return Hardware(
        platform=platform.platform(),
        python=platform.python_version(),
        machine=platform.machine(),
        cpu_count=os.cpu_count(),
        accelerators=_accelerators(),
    )


def library_versions(names: Iterable[str]) -> dict[str, str | None]:
    """Installed versions of distributions (None: not installed)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


class Provenance(BaseModel):
    """Who made a record: evalsuite version, source commit and dirty flag, time, machine, library versions.

    Records inherit these fields (or embed `fields()`) at their top level, so every format spells them alike.
    """

    model_config = ConfigDict(extra="allow")

    evalsuite_version: str
    git_commit: str | None = None
    # True: the checkout had uncommitted changes to tracked files, so `git_commit` alone does not give the code.
    git_dirty: bool | None = None
    created_at: str
    hardware: Hardware = Field(default_factory=Hardware)
    versions: dict[str, str | None] = Field(default_factory=dict)

    @classmethod
    def capture(cls, libraries: Iterable[str] = ()) -> Provenance:
        """This process's provenance now; `libraries` adds their installed versions."""
        commit = git_commit()
        return cls(
            evalsuite_version=evalsuite.__version__,
            git_commit=commit.sha if commit else None,
            git_dirty=commit.dirty if commit else None,
            created_at=now_iso(),
            hardware=hardware(),
            versions=library_versions(libraries),
        )

    def fields(self) -> dict[str, Any]:
        """The provenance fields as JSON values, to embed at the top level of another record."""
        return self.model_dump(mode="json")


def provenance_fields(libraries: Iterable[str] = ()) -> dict[str, Any]:
    """`Provenance.capture(libraries).fields()`: the fields a new record of any kind starts with."""
    return Provenance.capture(libraries).fields()


class ModelIdentity(BaseModel):
    """Which weights a result came from. A local file or directory is identified by its sha256; a hub model by its
    repository and commit (hashing weights the hub already names by commit would only cost time); a served model
    by the name given (what the server resolves it to is the backend's to record)."""

    model_config = ConfigDict(extra="allow")

    spec: str | None = None
    sha256: str | None = None
    hub_repo: str | None = None
    revision: str | None = None  # the hub commit
    model_hash: str | None = None  # a backend's own identity of what it replays (a recording's hash)

    def record(self) -> dict[str, Any]:
        """The manifest's `model` section (fields that do not apply left out)."""
        return self.model_dump(mode="json", exclude_none=True)


class DataFile(BaseModel):
    """A task's data file as a run evaluated it: its path and sha256, and the hash of the rows actually used."""

    model_config = ConfigDict(extra="allow")

    path: str | None = None
    sha256: str | None = None
    rows_sha256: str | None = None


class CorpusRecord(BaseModel):
    """The corpus an index was built from: its content hash, and size and mtime for a cheap unchanged-file check."""

    model_config = ConfigDict(extra="allow")

    path: str
    name: str | None = None
    sha256: str
    size_bytes: int
    mtime_ns: int
    num_documents: int
