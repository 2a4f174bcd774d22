"""The leaderboard folder: accepted submissions filed under `leaderboard/entries/<entry-id>/`, the site's settings.

An entry is the submission as submitted (submission.json, checksums.sha256, runs/…) plus `verification.json`,
the record of the verification that accepted it. The site never trusts that record: it verifies again.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import unicodedata
from pathlib import Path

import evalsuite
from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.submission import SUBMISSION_FILE, VERIFICATION_FILE, opened_submission
from evalsuite.leaderboard.verify import Limits, VerificationReport, verify_submission
from evalsuite.runs.provenance import git_commit, now_iso

ENTRIES_DIR = "entries"
DEFAULT_DIR = "leaderboard"


def entry_id(name: str) -> str:
    """A stable, URL- and file-safe id from an entry's display name, e.g. 'search-r1-qwen2-5-3b-base'."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
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
            raise EvalsuiteError(f"leaderboard directory {path} does not exist", hint="pass --leaderboard DIR (the folder holding entries/)")
        return path
    here = Path(DEFAULT_DIR)
    return here if (here / ENTRIES_DIR).is_dir() else packaged_leaderboard_dir()


def list_entries(leaderboard_dir: Path) -> list[Path]:
    """Every filed entry under <leaderboard>/entries/, sorted by id."""
    base = Path(leaderboard_dir) / ENTRIES_DIR
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / SUBMISSION_FILE).is_file())


def add_submission(submission: Path, leaderboard_dir: Path, data_dir: str | Path | None = None, entry: str | None = None,
                   replace: bool = False, limits: Limits | None = None) -> tuple[Path, VerificationReport]:
    """Verify a submission and, if accepted, file it under <leaderboard>/entries/<entry-id>/ with its verification record."""
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
    target = Path(leaderboard_dir) / ENTRIES_DIR / identifier
    if target.exists() and not replace:
        raise EvalsuiteError(f"{target} already exists", hint="pass --replace to file this submission over it, or --id ID")
    record = report.to_dict()
    record.update({"verified_at": now_iso(), "evalsuite_version": evalsuite.__version__, "git_commit": git_commit()})
    target.parent.mkdir(parents=True, exist_ok=True)
    with opened_submission(Path(submission)) as root, tempfile.TemporaryDirectory(dir=target.parent, prefix=".adding-") as tmp:
        staged = Path(tmp) / identifier
        shutil.copytree(root, staged)
        (staged / VERIFICATION_FILE).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    return target, report
