"""Submissions: run directories packed with metadata and checksums into a directory or a tarball.

Layout of a submission (a directory, or the same tree in a `.tar.gz`):

    submission.json          metadata (method, model and source, training data, compute, paper, contact, setting)
                             and the runs with the task → split each one declares
    runs/<name>/manifest.json
    runs/<name>/predictions.jsonl.gz   per-example records (gzip, written with mtime 0 so packing is reproducible)
    runs/<name>/metrics.json           the submitter's claimed summary; verification recomputes it
    checksums.sha256         `sha256sum -c` format, one line per file above

Nothing else may be inside (`defined_file` says what is), and nothing inside is ever read as task data: a split
is a name from `registered_splits`, never a path.
"""

from __future__ import annotations

import gzip
import io
import re
import os
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.files import file_sha256 as sha256_file
from evalsuite.provenance import Provenance
from evalsuite.runs.schema import MANIFEST_FILE, METRICS_FILE, PREDICTIONS_FILE
from evalsuite.tasks.registry import Task

FORMAT_VERSION = 1
SUBMISSION_FILE = "submission.json"
CHECKSUMS_FILE = "checksums.sha256"
RUNS_DIR = "runs"
PREDICTIONS_GZ = "predictions.jsonl.gz"
# Written by `leaderboard add` beside the submitted files; never trusted (the site recomputes everything).
VERIFICATION_FILE = "verification.json"
TARBALL_SUFFIXES = (".tar.gz", ".tgz")
# The files a packed run may hold (one predictions file, gzipped or plain).
RUN_FILES = frozenset({MANIFEST_FILE, METRICS_FILE, PREDICTIONS_GZ, PREDICTIONS_FILE})
TOP_LEVEL_FILES = frozenset({SUBMISSION_FILE, CHECKSUMS_FILE, VERIFICATION_FILE})
# The published 1,000-question subsample of a task's eval split (reason_over_search's `test_sub1000`).
SUBSAMPLE_SUFFIX = "_sub1000"
# `test@first:128`: a declared split narrowed to a deterministic subset of its questions (split_and_subset).
SUBSET_MARK = "@"

_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class ModelInfo(BaseModel):
    """The evaluated model and where to get it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    source: str | None = None


class Setting(BaseModel):
    """What makes scores comparable: rows with different settings are never ranked together."""

    model_config = ConfigDict(extra="forbid")
    corpus: str | None = None
    retriever: str | None = None
    topk: int | None = None
    max_turns: int | None = None

    def key(self) -> str:
        """A stable, readable key such as `wiki-18 · e5 · top-3 · 4 turns`."""
        parts = [
            self.corpus or "corpus ?",
            self.retriever or "retriever ?",
            f"top-{self.topk}" if self.topk else "top-?",
        ]
        if self.max_turns:
            parts.append(f"{self.max_turns} turns")
        return " · ".join(parts)


class SubmissionInfo(BaseModel):
    """Who and what a submission is; all of it is shown on the site (escaped)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    method: str = Field(min_length=1, max_length=200)
    model: ModelInfo
    training_data: str | None = None
    # How the model was trained to behave: the reward it was optimised for (and its turn limit, `setting.max_turns`,
    # is shown beside it): what a reader needs to tell a run that learned the task from one that learned a format.
    training_reward: str | None = Field(default=None, max_length=500)
    compute: str | None = None
    paper: str | None = None
    contact: str | None = None
    setting: Setting = Field(default_factory=Setting)
    description: str | None = Field(default=None, max_length=4000)

    @field_validator("paper")
    @classmethod
    def _paper_is_http(cls, value: str | None) -> str | None:
        # The site turns this into a link, so only web addresses (never `javascript:` and the like).
        if value is not None and not re.match(r"^https?://[^\s<>\"']+$", value):
            raise ValueError("paper must be an http(s) address")
        return value


def registered_splits(task: Task) -> tuple[str, ...]:
    """The split names a submission may declare for `task`: its eval split, its extra splits and the published
    1,000-question subsample of its eval split, each optionally with `@SUBSET` (split_and_subset). Anything else
    (a path above all) is refused."""
    return (task.eval_split, *task.extra_splits, task.eval_split + SUBSAMPLE_SUFFIX)


def split_and_subset(declared: str) -> tuple[str, str | None]:
    """`test@first:128` → ("test", "first:128"): a registered split, and the deterministic subset of its questions
    (`evalsuite run --subset`: first:N or sample:N:SEED) that the run covers in full; ("test", None) for a split
    declared whole. Verification rebuilds the subset's ids from the registry's rows, so the ids are never the
    submitter's choice beyond the spec, and the leaderboard ranks a subset only against the same subset."""
    split, mark, subset = declared.partition(SUBSET_MARK)
    return split, (subset if mark else None)


def with_subset(split: str, subset: str | None) -> str:
    """The split a run on `subset` of `split` declares (the whole split for no subset or `full`)."""
    return split if subset in (None, "full") else f"{split}{SUBSET_MARK}{subset}"


def split_label(declared: str) -> str:
    """A declared split as a reader says it: `test`, `test, first 128`, `test, 500 sampled with seed 7`."""
    split, subset = split_and_subset(declared)
    parts = (subset or "").split(":")
    if parts[0] == "first" and len(parts) == 2:
        return f"{split}, first {parts[1]}"
    if parts[0] == "sample" and len(parts) == 3:
        return f"{split}, {parts[1]} sampled with seed {parts[2]}"
    return declared


def split_covers(declared: str, recorded: str | None) -> bool:
    """Whether a run or record that says `recorded` may stand for the declared split: the same split (or a subset
    of it), its subsample (outputs imported from a subsample run name the full split), or nothing recorded."""
    split, _ = split_and_subset(declared)
    return recorded is None or recorded == split or split == recorded + SUBSAMPLE_SUFFIX


def defined_file(rel: str, runs: set[str] | None) -> bool:
    """Whether `rel` is a file the submission format defines; `runs` are the declared run names (None: any)."""
    if rel in TOP_LEVEL_FILES:
        return True
    parts = rel.split("/")
    return (
        len(parts) == 3
        and parts[0] == RUNS_DIR
        and parts[2] in RUN_FILES
        and (parts[1] in runs if runs is not None else bool(_RUN_NAME.match(parts[1])))
    )


class RunRef(BaseModel):
    """One packed run: its folder name under runs/, the split each of its tasks covers in full, and whether it
    knowingly holds failed records (each scores 0 on every metric; without this flag a failed record is refused)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    tasks: dict[str, str]
    includes_failed: bool = False

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not _RUN_NAME.match(value):
            raise ValueError("run names are letters, digits, '.', '_' and '-' (no path separators)")
        return value


class SubmissionFile(Provenance):
    """`submission.json`: the shared provenance fields of the packing (evalsuite.provenance), the info and the runs."""

    model_config = ConfigDict(extra="forbid")
    format_version: int = FORMAT_VERSION
    info: SubmissionInfo
    runs: list[RunRef]


def defined_directory(rel: str, runs: set[str] | None) -> bool:
    """Whether `rel` is a folder the submission format defines: `runs/` and each declared run's folder in it."""
    parts = rel.split("/")
    return parts == [RUNS_DIR] or (
        len(parts) == 2
        and parts[0] == RUNS_DIR
        and (parts[1] in runs if runs is not None else bool(_RUN_NAME.match(parts[1])))
    )


def entry_kind(mode: int) -> str:
    """What a directory entry is, by its own (not followed) mode: "file", "directory", or what else it is."""
    kinds = (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "named pipe (FIFO)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    )
    return next((name for test, name in kinds if test(mode)), "special file")


def submission_entries(root: Path, limit: int) -> dict[str, str] | None:
    """Every entry under a submission's root, walked without following links: POSIX path relative to the root →
    `entry_kind`. None when there are more than `limit` entries (nothing past them is looked at)."""
    entries: dict[str, str] = {}
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as listing:
            for entry in listing:
                kind = entry_kind(entry.stat(follow_symlinks=False).st_mode)
                rel = Path(entry.path).relative_to(root).as_posix()
                entries[rel] = kind
                if len(entries) > limit:
                    return None
                if kind == "directory":
                    pending.append(Path(entry.path))
    return dict(sorted(entries.items()))


def submission_files(root: Path) -> list[str]:
    """Every file of a submission as a POSIX path relative to its root, sorted; the checksum file excluded."""
    skip = {CHECKSUMS_FILE, VERIFICATION_FILE}
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.relative_to(root).as_posix() not in skip
    )


def write_checksums(root: Path) -> Path:
    """Write `checksums.sha256` over every file of the submission."""
    lines = [f"{sha256_file(root / rel)}  {rel}\n" for rel in submission_files(root)]
    path = root / CHECKSUMS_FILE
    path.write_text("".join(lines), encoding="utf-8")
    return path


def parse_checksums(text: str, where: str) -> dict[str, str]:
    """Read `sha256sum` lines into {path: hex digest}; a malformed line is an error naming it."""
    sums: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = re.match(r"^([0-9a-f]{64}) [ *](.+)$", line)
        if not match:
            raise DataError(
                f"{where}:{lineno}: not a `sha256sum` line: {line[:80]!r}", hint="regenerate it with `evalsuite submit`"
            )
        sums[match.group(2)] = match.group(1)
    return sums


def write_gzip(data: bytes, path: Path) -> None:
    """Gzip with mtime 0 and no file name, so the same content always gives the same bytes (and checksum)."""
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as handle:
        handle.write(data)


def is_tarball(path: Path) -> bool:
    return path.name.endswith(TARBALL_SUFFIXES)


def write_tarball(root: Path, output: Path) -> Path:
    """Pack a submission directory into a reproducible `.tar.gz` (sorted members, zeroed times and owners)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in submission_files(root) + [CHECKSUMS_FILE]:
            data = (root / rel).read_bytes()
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_gzip(buffer.getvalue(), output)
    return output


def _safe_extract(tarball: Path, target: Path, max_total_bytes: int, max_members: int) -> None:
    """Extract regular files only, refusing absolute paths, `..`, links, devices, oversized archives, archives
    of more than `max_members` members and truncated or corrupt ones (each with one line naming the archive)."""
    try:
        tar = tarfile.open(tarball, mode="r:*")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{tarball}: not a readable tarball ({exc or type(exc).__name__})",
            hint="pass the .tar.gz written by `evalsuite submit`",
        ) from None
    with tar:
        try:
            _extract_members(tar, tarball, target, max_total_bytes, max_members)
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            # Click would print a bare `Aborted.` for the EOFError of a cut-off gzip stream.
            raise DataError(
                f"{tarball}: truncated or corrupt archive ({exc or type(exc).__name__})",
                hint="upload the whole file again (`gzip -t` checks it)",
            ) from None


def _extract_members(tar: tarfile.TarFile, tarball: Path, target: Path, max_total_bytes: int, max_members: int) -> None:
    # Every member is checked before anything is written, so a refused archive costs only its reading.
    files: list[tarfile.TarInfo] = []
    total = 0
    for count, member in enumerate(tar, start=1):
        if count > max_members:
            raise DataError(f"{tarball}: more than {max_members} members (a submission holds a few files per run)")
        name = member.name
        parts = Path(name).parts
        if name.startswith("/") or ".." in parts or not parts:
            raise DataError(
                f"{tarball}: member {name!r} has an unsafe path", hint="a submission tarball holds relative paths only"
            )
        if member.isdir():
            continue
        if not member.isfile():
            raise DataError(f"{tarball}: member {name!r} is a link or device, not a regular file")
        total += member.size
        if total > max_total_bytes:
            raise DataError(f"{tarball}: more than {max_total_bytes} bytes once unpacked (oversized submission)")
        files.append(member)
    for member in files:
        destination = target / member.name
        destination.parent.mkdir(parents=True, exist_ok=True)
        source = tar.extractfile(member)
        assert source is not None  # regular files always have a stream
        with destination.open("wb") as out:
            shutil.copyfileobj(source, out)


@contextmanager
def opened_submission(path: Path, max_total_bytes: int = 1 << 30, max_members: int = 1000) -> Iterator[Path]:
    """The submission's root directory: the path itself, or a temporary extraction of a tarball."""
    path = Path(path)
    if path.is_dir():
        yield path
        return
    if not path.is_file():
        raise EvalsuiteError(
            f"submission {path} does not exist", hint="pass the directory or .tar.gz written by `evalsuite submit`"
        )
    if not is_tarball(path):
        raise EvalsuiteError(
            f"{path} is neither a submission directory nor a .tar.gz", hint="pass what `evalsuite submit` wrote"
        )
    with tempfile.TemporaryDirectory(prefix="evalsuite-submission-") as tmp:
        _safe_extract(path, Path(tmp), max_total_bytes, max_members)
        yield Path(tmp)
