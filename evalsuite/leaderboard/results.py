"""The leaderboard folder: accepted submissions filed under `leaderboard/entries/<entry-id>/`, the site's settings.

An entry is the submission as submitted (submission.json, checksums.sha256, runs/…) plus `verification.json`,
the record of the verification that accepted it. The site never trusts that record: it verifies again.

Filing is crash-safe. The new entry is copied to `.partial-<id>-<pid>`, renamed `.staged-<id>` once complete,
then swapped in with renames: `<id>` → `.replaced-<id>`, `.staged-<id>` → `<id>`, and only then is the old copy
deleted. A kill at any point leaves the old or the new entry complete: `scan_entries` finds it (reporting what
an interrupted `add` left behind) and the next `add` of that id finishes or undoes the swap.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.files import fsync_directory
from evalsuite.leaderboard.submission import (
    CHECKSUMS_FILE,
    SUBMISSION_FILE,
    VERIFICATION_FILE,
    opened_submission,
    submission_files,
)
from evalsuite.leaderboard.verification.files import Limits
from evalsuite.leaderboard.verification.report import VerificationReport
from evalsuite.leaderboard.verify import verify_submission
from evalsuite.provenance import provenance_fields

ENTRIES_DIR = "entries"
DEFAULT_DIR = "leaderboard"
PARTIAL_PREFIX = ".partial-"
STAGED_PREFIX = ".staged-"
REPLACED_PREFIX = ".replaced-"
LOCK_FILE = ".add.lock"
_ENTRY_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


# Letters from other scripts that render like Latin ones (Unicode's confusables for the Latin alphabet, the ones
# common fonts draw identically): folded before names are compared, so "Seаrch-R1" with a Cyrillic "а" is the
# filed "Search-R1", not a second entry that reads the same.
_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "і": "i",
        "ј": "j",
        "һ": "h",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "ӏ": "l",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
        "ı": "i",
        "ℓ": "l",
        "Ɩ": "l",
    }
)


def name_key(name: str) -> str:
    """How entry names are compared: NFKC (full-width and compatibility forms), case folded, invisible format
    characters (zero-width spaces, joiners, direction marks) dropped, confusable letters folded to Latin, runs of
    whitespace made one space."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf").translate(_CONFUSABLES)
    return " ".join(unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").split()) or text


def entry_id(name: str) -> str:
    """A stable, URL- and file-safe id from an entry's display name, e.g. 'search-r1-qwen2-5-3b-base'."""
    ascii_name = name_key(name)
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:80].strip("-")
    if not slug:
        raise EvalsuiteError(f"cannot make an entry id from the name {name!r}", hint="pass --id ID")
    return slug


def resolve_leaderboard_dir(leaderboard_dir: str | Path | None) -> Path:
    """The folder given, else ./leaderboard when it holds entries/, else the leaderboard shipped with evalsuite."""
    from evalsuite.resources import packaged_leaderboard_dir

    if leaderboard_dir is not None:
        path = Path(leaderboard_dir)
        if not path.is_dir():
            raise EvalsuiteError(
                f"leaderboard directory {path} does not exist",
                hint="pass --leaderboard DIR (the folder holding entries/)",
            )
        return path
    here = Path(DEFAULT_DIR)
    return here if (here / ENTRIES_DIR).is_dir() else packaged_leaderboard_dir()


def _complete(path: Path) -> bool:
    # verification.json is written last, so an entry holding it and submission.json was filed in full.
    return (path / SUBMISSION_FILE).is_file() and (path / VERIFICATION_FILE).is_file()


@dataclass
class EntryScan:
    """The entries a leaderboard folder holds (one complete directory per id) and what interrupted filings left."""

    entries: dict[str, Path] = field(default_factory=dict)  # entry id → the complete directory to read
    # Leftovers the scan worked around, one line each (the build prints them).
    notes: list[str] = field(default_factory=list)
    # Entry directories that are not complete and have no complete copy: the build refuses to drop them silently.
    broken: list[str] = field(default_factory=list)


def scan_entries(leaderboard_dir: Path) -> EntryScan:
    """Every filed entry under <leaderboard>/entries/, sorted by id, read-only: an id whose swap was interrupted is
    read from its complete staged (new) or replaced (old) copy, and every leftover is reported."""
    base = Path(leaderboard_dir) / ENTRIES_DIR
    scan = EntryScan()
    if not base.is_dir():
        return scan
    ids: set[str] = set()
    for path in base.iterdir():
        name = path.name
        if name.startswith((PARTIAL_PREFIX, ".adding-")):  # .adding-: the temporary folder of older versions
            scan.notes.append(
                f"{path}: an `add` killed while copying (the entry it was filing was never swapped in); delete it"
            )
        elif name.startswith((STAGED_PREFIX, REPLACED_PREFIX)):
            ids.add(name.split("-", 1)[1])
        elif path.is_dir() and _ENTRY_ID.match(name):
            ids.add(name)
    for identifier in sorted(ids):
        target, staged, replaced = (
            base / identifier,
            base / f"{STAGED_PREFIX}{identifier}",
            base / f"{REPLACED_PREFIX}{identifier}",
        )
        if _complete(target):
            scan.entries[identifier] = target
            for leftover in (p for p in (staged, replaced) if p.exists()):
                scan.notes.append(
                    f"{leftover}: left by an interrupted `add --overwrite`; {target} is complete, delete it"
                )
        elif _complete(staged):
            scan.entries[identifier] = staged
            scan.notes.append(
                f"{target}: an `add --overwrite` was killed mid-swap; read the new entry from {staged.name} "
                f"(rerun the add, or rename it to {identifier})"
            )
        elif _complete(replaced):
            scan.entries[identifier] = replaced
            scan.notes.append(
                f"{target}: an `add --overwrite` was killed mid-swap; read the old entry from {replaced.name} "
                f"(rename it to {identifier})"
            )
        elif target.exists():
            missing = [f for f in (SUBMISSION_FILE, VERIFICATION_FILE) if not (target / f).is_file()]
            scan.broken.append(f"{target} is half-written (no {' or '.join(missing)}) and no complete copy is left")
    return scan


def list_entries(leaderboard_dir: Path) -> list[Path]:
    """Every filed entry under <leaderboard>/entries/, sorted by id (see `scan_entries` for interrupted filings)."""
    return list(scan_entries(leaderboard_dir).entries.values())


def settle(base: Path, identifier: str) -> list[str]:
    """Finish or undo an interrupted filing of `identifier`: keep the complete entry in place (or swap the
    complete staged copy in, or put the replaced one back) and delete what is left over. Returns one line per step."""
    target, staged, replaced = (
        base / identifier,
        base / f"{STAGED_PREFIX}{identifier}",
        base / f"{REPLACED_PREFIX}{identifier}",
    )
    done: list[str] = []
    if not _complete(target):
        for candidate in (staged, replaced):
            if _complete(candidate):
                if target.exists():
                    shutil.rmtree(target)
                candidate.rename(target)
                done.append(f"restored {target} from {candidate.name}")
                break
    for leftover in (staged, replaced, *base.glob(f"{PARTIAL_PREFIX}{identifier}-*")):
        if leftover.exists():
            shutil.rmtree(leftover)
            done.append(f"removed {leftover.name}, left by an interrupted add")
    return done


def _stage(root: Path, base: Path, identifier: str, record: dict) -> Path:
    """Copy the submission beside the entries and mark it complete by renaming it to `.staged-<id>`."""
    partial = base / f"{PARTIAL_PREFIX}{identifier}-{os.getpid()}"
    if partial.exists():
        shutil.rmtree(partial)
    try:
        # Only the regular files verification read are copied (a submitted verification.json is never trusted or
        # kept: ours is written last); whatever fails on the way, nothing half-copied stays behind.
        for rel in [*submission_files(root), CHECKSUMS_FILE]:  # (the listing leaves verification.json out)
            (partial / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, partial / rel, follow_symlinks=False)
        with (partial / VERIFICATION_FILE).open("w", encoding="utf-8") as handle:
            handle.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    staged = base / f"{STAGED_PREFIX}{identifier}"
    partial.rename(staged)
    return staged


def add_submission(
    submission: Path,
    leaderboard_dir: Path,
    data_dir: str | Path | None = None,
    entry: str | None = None,
    replace: bool = False,
    limits: Limits | None = None,
) -> tuple[Path, VerificationReport]:
    """Verify a submission and, if accepted, file it under <leaderboard>/entries/<entry-id>/ with its verification
    record; with `replace`, swap it in for an existing entry so that a kill at any point leaves one complete entry."""
    report = verify_submission(submission, data_dir, limits)
    if not report.accepted:
        first = report.problem_lines()[:3]
        raise EvalsuiteError(
            f"{submission} was rejected ({len(report.problems)} problems), first: " + "; ".join(first),
            hint="see the full report with `evalsuite leaderboard verify`",
        )
    assert report.info is not None  # accepted implies a parsed submission.json
    identifier = entry_id(entry or report.info.name)
    if entry is not None and identifier != entry:
        raise EvalsuiteError(f"entry id {entry!r} is not a slug", hint=f"use {identifier!r}")
    base = Path(leaderboard_dir) / ENTRIES_DIR
    base.mkdir(parents=True, exist_ok=True)
    with folder_lock(Path(leaderboard_dir)):
        return _file(Path(submission), base, identifier, report, replace)


@contextmanager
def folder_lock(leaderboard_dir: Path):
    """An exclusive lock on the leaderboard folder for one `add`: a second `add` waits for the first (the kernel
    drops the lock when its holder dies, so a killed `add` never leaves it held)."""
    import fcntl

    with open(leaderboard_dir / LOCK_FILE, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def filed_names(base: Path) -> dict[str, str]:
    """name_key → entry id of every filed entry (read from its submission.json; an unreadable one is skipped, as
    `build` names it)."""
    names: dict[str, str] = {}
    for identifier, path in scan_entries(base.parent).entries.items():
        try:
            meta = json.loads((path / SUBMISSION_FILE).read_text(encoding="utf-8")[: 1 << 20])
            names[name_key(str(meta["info"]["name"]))] = identifier
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return names


def _file(
    submission: Path, base: Path, identifier: str, report: VerificationReport, replace: bool
) -> tuple[Path, VerificationReport]:
    assert report.info is not None
    target = base / identifier
    settle(base, identifier)
    clash = filed_names(base).get(name_key(report.info.name))
    if clash is not None and clash != identifier:
        raise EvalsuiteError(
            f"{submission / SUBMISSION_FILE}: info.name {report.info.name!r} reads the same as filed entry "
            f"{clash!r} (compared after Unicode normalisation and confusable folding)",
            hint="give the submission a name that differs in its letters, not only in how they are encoded",
        )
    if target.exists() and not replace:
        raise EvalsuiteError(
            f"{target} already exists", hint="pass --overwrite to file this submission over it, or --id ID"
        )
    record = report.to_dict()
    provenance = provenance_fields()
    record.update({"verified_at": provenance.pop("created_at"), **provenance})
    with opened_submission(submission) as root:
        staged = _stage(root, base, identifier, record)
    replaced = base / f"{REPLACED_PREFIX}{identifier}"
    if target.exists():
        target.rename(replaced)
    staged.rename(target)
    fsync_directory(base)
    if replaced.exists():
        shutil.rmtree(replaced)
    return target, report
