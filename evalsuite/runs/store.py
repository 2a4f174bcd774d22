"""Reading and writing run directories: append-only predictions that survive a killed process or a full disk.

Every write either completes or leaves the file as it was: a prediction line is appended in one piece (a failed
append is cut back off), and whole files (manifest, metrics, a rewritten predictions.jsonl) go to a temporary file
that is fsynced and renamed over the old one, so a kill or ENOSPC at any point leaves the old or the new file.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.files import MAX_CONFIG_BYTES, read_untrusted_bytes, replace_atomically
from evalsuite.runs.schema import (
    MANIFEST_FILE,
    MANIFEST_VERSION,
    METRICS_FILE,
    PREDICTIONS_FILE,
    RUN_PLOT,
    SCHEMA_VERSION,
    ExampleRecord,
    Manifest,
    MetricsFile,
    manifest_from_json,
)

log = logging.getLogger(__name__)


def _check_version(version: object, where: str) -> None:
    if version != SCHEMA_VERSION:
        raise DataError(
            f"{where}: schema_version {version!r} is not supported (this evalsuite reads {SCHEMA_VERSION})",
            hint="rescore the source with this version of evalsuite",
        )


def read_predictions(path: Path, *, repair: bool = False) -> list[ExampleRecord]:
    """Read predictions.jsonl. A torn last line (a killed writer) is reported and dropped; elsewhere it is an error.

    With `repair`, the torn tail is also cut from the file so that appending can continue.
    """
    records: list[ExampleRecord] = []
    if not path.exists():
        return records
    if not path.is_file():  # a pipe or a device would block or never end; run directories may be someone else's
        raise DataError(
            f"{path}: not a regular file", hint="predictions.jsonl is a file written by `evalsuite run` or `score`"
        )
    data = path.read_bytes()
    lines = data.split(b"\n")
    good_bytes = 0
    for index, raw in enumerate(lines):
        lineno = index + 1
        is_last = index == len(lines) - 1 or all(not rest.strip() for rest in lines[index + 1 :])
        if not raw.strip():
            good_bytes += len(raw) + 1
            continue
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if is_last:
                log.warning("%s:%d: dropping a torn last line (%d bytes): %s", path, lineno, len(raw), exc)
                if repair:
                    with path.open("r+b") as handle:
                        handle.truncate(good_bytes)
                break
            raise DataError(f"{path}:{lineno}: invalid JSON in the middle of the file ({exc})") from None
        _check_version(obj.get("schema_version"), f"{path}:{lineno}")
        try:
            records.append(ExampleRecord.model_validate(obj))
        except ValidationError as exc:
            raise DataError(
                f"{path}:{lineno}: not a valid example record: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}"
            ) from None
        good_bytes += len(raw) + 1
    return records


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"field '{'.'.join(str(part) for part in first['loc']) or '(top level)'}': {first['msg']}"


def write_error(path: Path, exc: OSError) -> EvalsuiteError:
    """A failed write as one clear line; the file still holds everything finished before it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EvalsuiteError(
            f"cannot write {path}: the disk is full",
            hint="free some space, then rerun the same command with --resume (finished examples on disk are kept)",
        )
    return EvalsuiteError(
        f"cannot write {path}: {exc.strerror or exc}", hint="check that the directory is writable and has space"
    )


def _write_all(handle: Any, data: bytes) -> None:
    """Write every byte through an unbuffered file (a raw write may take only part of them)."""
    view = memoryview(data)
    while view:
        view = view[handle.write(view) :]


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` by `data` atomically (`files.replace_atomically`); a failed write is one clear line."""
    try:
        replace_atomically(path, data)
    except OSError as exc:
        raise write_error(path, exc) from None


def _record_line(record: ExampleRecord) -> bytes:
    return (record.model_dump_json() + "\n").encode("utf-8")


class PredictionWriter:
    """Appends example records to predictions.jsonl, one whole line each, so a kill loses nothing finished.

    Each line goes to the OS in one unbuffered write, so a killed process leaves at most a torn last line (which the
    reader drops). A write that fails (disk full) is cut back off the file before the error is raised.
    """

    def __init__(self, path: Path, fsync: bool = False):
        self.path = path
        self.fsync = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._handle = path.open("ab", buffering=0)
        except OSError as exc:
            raise write_error(path, exc) from None

    def append(self, record: ExampleRecord) -> None:
        end = self._handle.seek(0, os.SEEK_END)
        try:
            _write_all(self._handle, _record_line(record))
            if self.fsync:
                os.fsync(self._handle.fileno())
        except OSError as exc:
            try:
                os.ftruncate(self._handle.fileno(), end)  # shrinking needs no space: the file ends on a whole line
            except OSError:
                pass  # the reader drops a torn last line anyway
            raise write_error(self.path, exc) from None

    def extend(self, records: Iterable[ExampleRecord]) -> None:
        for record in records:
            self.append(record)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> PredictionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunDirectory:
    """A run directory on disk: manifest.json, predictions.jsonl, metrics.json and metrics.png.

    Every command that makes one (`run` and its Ray driver, `score`, `merge`, `merge --as-seeds`) writes it through
    these methods, so the same files with the same columns come out of each: `start` (the manifest, not yet
    finished, and an empty predictions.jsonl), `writer` (records appended as they finish), or `write` (records that
    are all at hand), then `finish` (metrics.json with the process summary, the cached score columns, metrics.png,
    and last the manifest with `finished_at`, the marker that the directory is complete).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST_FILE

    @property
    def predictions_path(self) -> Path:
        return self.path / PREDICTIONS_FILE

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    @property
    def plot_path(self) -> Path:
        return self.path / RUN_PLOT

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    def make(self) -> None:
        """Create the directory (and its parents) if missing."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def write_manifest(self, manifest: Manifest) -> None:
        """The one writer of manifest.json (atomically, at the current manifest version: an old manifest read and
        written back is stored migrated)."""
        self.make()
        manifest = manifest.model_copy(update={"schema_version": MANIFEST_VERSION})
        write_atomically(self.manifest_path, (manifest.model_dump_json(indent=2) + "\n").encode("utf-8"))

    def start(self, manifest: Manifest) -> None:
        """Begin a fresh run directory: its manifest, not yet finished, and an empty predictions.jsonl."""
        self.write_manifest(manifest)
        self.rewrite_predictions([])

    def write(self, manifest: Manifest, records: list[ExampleRecord], *, complete: bool = True) -> MetricsFile:
        """A whole run directory from records that are all at hand (`score`, `merge`): predictions.jsonl replaced
        atomically (so rescoring a directory in place never leaves it without its records), then `finish`."""
        self.rewrite_predictions(records)
        return self.finish(manifest, records, complete=complete)

    def finish(self, manifest: Manifest, records: list[ExampleRecord], *, complete: bool = True) -> MetricsFile:
        """Summarize `records` (those now in predictions.jsonl) into metrics.json, with the rule-based process summary
        in its `extra`; cache their score columns; draw metrics.png; and write the manifest last. A `complete`
        directory is marked finished: `finished_at` now, unless the manifest already records when its trajectories
        finished (a rescored or merged run keeps that time). A run stopped early is not marked, and resumes."""
        from evalsuite.metrics.process import process_summary
        from evalsuite.provenance import now_iso
        from evalsuite.runs.columns import write_scores
        from evalsuite.runs.plot import write_run_plot
        from evalsuite.runs.summary import summarize

        metrics = summarize(records)
        metrics.extra["process"] = process_summary(records)
        self.write_metrics(metrics)
        write_scores(self.path, records)
        write_run_plot(metrics, self.plot_path, self._plot_title(manifest))
        if complete and manifest.finished_at is None:
            manifest.finished_at = now_iso()
        self.write_manifest(manifest)
        return metrics

    def _plot_title(self, manifest: Manifest) -> str:
        """The plot's title: the method and the model the backend reports (an import's: its directory's name)."""
        model = manifest.backend.model or manifest.model.spec
        return f"{manifest.method} · {Path(str(model)).name if model else self.path.name}"

    def read_manifest(self) -> Manifest:
        if not self.manifest_path.is_file():
            raise EvalsuiteError(
                f"{self.path} is not a run directory (no {MANIFEST_FILE})",
                hint="pass a directory written by `evalsuite run` or `evalsuite score`",
            )
        try:
            # A run directory may be someone else's: a manifest is kilobytes, never a pipe or a device.
            obj = json.loads(read_untrusted_bytes(self.manifest_path, MAX_CONFIG_BYTES, "manifest").decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DataError(f"{self.manifest_path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"{self.manifest_path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
        return manifest_from_json(obj, str(self.manifest_path))

    def read_predictions(self, *, repair: bool = False) -> list[ExampleRecord]:
        return read_predictions(self.predictions_path, repair=repair)

    def writer(self, *, fresh: bool = False) -> PredictionWriter:
        """A writer appending to predictions.jsonl; `fresh` starts the file over."""
        self.make()
        if fresh:
            write_atomically(self.predictions_path, b"")
        return PredictionWriter(self.predictions_path)

    def rewrite_predictions(self, records: Iterable[ExampleRecord]) -> None:
        """Replace predictions.jsonl by `records` atomically: a kill or a full disk leaves the old file whole."""
        self.make()
        write_atomically(self.predictions_path, b"".join(_record_line(record) for record in records))

    def write_metrics(self, metrics: MetricsFile) -> None:
        self.make()
        write_atomically(self.metrics_path, (metrics.model_dump_json(indent=2) + "\n").encode("utf-8"))

    def read_metrics(self) -> MetricsFile:
        try:  # bounded, and a pipe refused rather than waited on: a run directory may be someone else's
            data = read_untrusted_bytes(self.metrics_path, MAX_CONFIG_BYTES, "metrics file")
            return MetricsFile.model_validate_json(data)
        except ValidationError as exc:
            raise DataError(
                f"{self.metrics_path}: not a valid metrics file: {_first_error(exc)}",
                hint="rebuild it with `evalsuite score`",
            ) from None
        except FileNotFoundError:
            raise EvalsuiteError(f"{self.path} has no {METRICS_FILE}", hint="run `evalsuite score` on it") from None
