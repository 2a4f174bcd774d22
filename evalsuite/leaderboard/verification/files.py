"""The submission's files: only those its format defines, each listed with its checksum, UTF-8, within the size
limits and of the schema it claims; the predictions read line by line."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.leaderboard.submission import (
    CHECKSUMS_FILE,
    FORMAT_VERSION,
    PREDICTIONS_GZ,
    SubmissionFile,
    VERIFICATION_FILE,
    defined_directory,
    defined_file,
    entry_kind,
    parse_checksums,
    sha256_file,
    submission_entries,
)
from evalsuite.runs import SCHEMA_VERSION, ExampleRecord, Manifest
from evalsuite.runs.schema import PREDICTIONS_FILE, manifest_from_json
from evalsuite.leaderboard.verification.report import SHOWN_PER_CHECK, VerificationReport


@dataclass(frozen=True)
class Limits:
    """Size limits: uncompressed bytes per file, in total, and per predictions line."""

    max_file_bytes: int = 256 << 20
    max_total_bytes: int = 1 << 30
    max_line_bytes: int = 8 << 20
    # Files (tar members) per submission: a submission holds three files per run plus three.
    max_files: int = 1000


def _decode(data: bytes, where: str, report: VerificationReport) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add("encoding", where, f"not UTF-8 ({exc.reason} at byte {exc.start})")
        return None


def _read_bounded(path: Path, limits: Limits, where: str, report: VerificationReport) -> bytes | None:
    """The file's bytes, gunzipped when it ends in .gz, refusing anything over the per-file limit and anything that is
    not a regular file (a link is not followed; a FIFO is never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        report.add("format", where, f"cannot read ({exc.strerror})")
        return None
    with os.fdopen(fd, "rb") as raw:
        kind = entry_kind(os.fstat(raw.fileno()).st_mode)
        if kind != "file":
            report.add("format", where, f"is a {kind}; a submission holds regular files only")
            return None
        try:
            handle = gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw
            data = handle.read(limits.max_file_bytes + 1)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            report.add("format", where, f"cannot read ({exc})")
            return None
    if len(data) > limits.max_file_bytes:
        report.add("oversized", where, f"more than {limits.max_file_bytes} bytes (uncompressed)")
        return None
    return data


def load_model(path: Path, model: type[BaseModel], limits: Limits, where: str, report: VerificationReport) -> Any:
    if not path.is_file():
        report.add("schema", where, "missing")
        return None
    data = _read_bounded(path, limits, where, report)
    text = None if data is None else _decode(data, where, report)
    if text is None:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        report.add("schema", f"{where}:{exc.lineno}", f"invalid JSON ({exc.msg})")
        return None
    if model is Manifest:  # the one manifest reader: version 1 migrated, anything else one problem line
        try:
            return manifest_from_json(obj, where)
        except DataError as exc:
            report.add("schema", where, exc.message.removeprefix(f"{where}: "))
            return None
    if model is not SubmissionFile and isinstance(obj, dict) and obj.get("schema_version") != SCHEMA_VERSION:
        report.add("schema", where, f"schema_version {obj.get('schema_version')!r} is not {SCHEMA_VERSION}")
        return None
    if (
        model is SubmissionFile
        and isinstance(obj, dict)
        and obj.get("format_version", FORMAT_VERSION) != FORMAT_VERSION
    ):
        report.add(
            "format-version",
            where,
            f"format_version {obj.get('format_version')!r} is not one this evalsuite "
            f"reads ({FORMAT_VERSION}); repack with this version's `evalsuite submit`",
        )
        return None
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        for error in exc.errors()[:SHOWN_PER_CHECK]:
            report.add("schema", where, f"{'.'.join(map(str, error['loc'])) or '(top level)'}: {error['msg']}")
        return None


def check_files(root: Path, limits: Limits, report: VerificationReport, runs: set[str] | None) -> None:
    """Only the files the format defines (for the declared `runs`), checksums of every one, no links, no unlisted
    or missing files, and the file-count and total size limits."""
    # Every entry is looked at, links not followed: only regular files and the folders the format defines pass.
    entries = submission_entries(root, 2 * limits.max_files + 2)
    if entries is None:
        report.add("oversized", ".", f"more than {2 * limits.max_files + 2} files and folders, over the limit")
        return
    # an undeclared folder is named when nothing in it is (its files are refused each in their own line)
    named = {
        "/".join(rel.split("/")[:depth])
        for rel, kind in entries.items()
        if kind != "directory"
        for depth in range(1, rel.count("/") + 1)
    }
    for rel, kind in entries.items():
        if kind == "directory" and not defined_directory(rel, runs) and rel not in named:
            report.add(
                "unexpected-file",
                rel,
                "a folder the submission format does not define (it holds runs/ and one folder per declared run)",
            )
        elif kind not in ("file", "directory"):
            report.add("format", rel, f"is a {kind}; a submission holds regular files only")
    files = [rel for rel, kind in entries.items() if kind == "file" and rel not in (CHECKSUMS_FILE, VERIFICATION_FILE)]
    present = {rel for rel, kind in entries.items() if kind != "directory"}
    report.n_files = len(files)
    if len(files) > limits.max_files:
        report.add("oversized", ".", f"{len(files)} files, over the limit of {limits.max_files}")
        return
    total = 0
    for rel in files:
        path = root / rel
        if not defined_file(rel, runs):
            report.add(
                "unexpected-file",
                rel,
                "not a file of the submission format (submission.json, checksums.sha256 "
                "and each declared run's manifest.json, metrics.json and predictions)",
            )
            continue
        size = path.stat().st_size
        total += size
        if size > limits.max_file_bytes:
            report.add("oversized", rel, f"{size} bytes, over the limit of {limits.max_file_bytes}")
    if total > limits.max_total_bytes:
        report.add("oversized", ".", f"{total} bytes in all, over the limit of {limits.max_total_bytes}")
    if entries.get(CHECKSUMS_FILE) != "file":
        if CHECKSUMS_FILE not in entries:
            report.add("checksum", CHECKSUMS_FILE, "missing; every file must be listed with its sha256")
        return
    data = _read_bounded(root / CHECKSUMS_FILE, limits, CHECKSUMS_FILE, report)
    text = None if data is None else _decode(data, CHECKSUMS_FILE, report)
    if text is None:
        return
    try:
        listed = parse_checksums(text, CHECKSUMS_FILE)
    except EvalsuiteError as exc:
        report.add("checksum", CHECKSUMS_FILE, exc.message)
        return
    for rel in files:
        if not defined_file(rel, runs):
            continue  # already refused above
        if rel not in listed:
            report.add("checksum", rel, f"present but not listed in {CHECKSUMS_FILE}")
        elif sha256_file(root / rel) != listed[rel]:
            report.add(
                "checksum",
                rel,
                f"sha256 {sha256_file(root / rel)[:16]}… does not match {CHECKSUMS_FILE} ({listed[rel][:16]}…)",
            )
    for rel in sorted(set(listed) - present):
        report.add("checksum", rel, f"listed in {CHECKSUMS_FILE} but missing")


def read_records(
    run_dir: Path, where: str, limits: Limits, report: VerificationReport
) -> list[tuple[int, ExampleRecord]] | None:
    """(line number, record) for each predictions line; every bad line is a problem naming file:line.

    None when the file itself cannot be read (missing, oversized, not UTF-8): that one problem is reported.
    """
    candidates = [run_dir / PREDICTIONS_GZ, run_dir / PREDICTIONS_FILE]
    present = [p for p in candidates if p.is_file()]
    if len(present) != 1:
        report.add(
            "schema", where, f"needs exactly one of {PREDICTIONS_GZ} or {PREDICTIONS_FILE}, found {len(present)}"
        )
        return None
    path = present[0]
    where = f"{where}/{path.name}"
    data = _read_bounded(path, limits, where, report)
    text = None if data is None else _decode(data, where, report)
    if text is None:
        return None
    records: list[tuple[int, ExampleRecord]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        at = f"{where}:{lineno}"
        if len(line.encode("utf-8")) > limits.max_line_bytes:
            report.add("oversized", at, f"line over {limits.max_line_bytes} bytes")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            report.add("schema", at, f"invalid JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict) or obj.get("schema_version") != SCHEMA_VERSION:
            report.add("schema", at, f"not an example record of schema_version {SCHEMA_VERSION}")
            continue
        try:
            records.append((lineno, ExampleRecord.model_validate(obj)))
        except ValidationError as exc:
            error = exc.errors()[0]
            report.add("schema", at, f"{'.'.join(map(str, error['loc']))}: {error['msg']}")
    return records
