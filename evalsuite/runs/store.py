"""Reading and writing run directories: append-only predictions that survive a killed process."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.runs.schema import (
    MANIFEST_FILE,
    METRICS_FILE,
    PREDICTIONS_FILE,
    SCHEMA_VERSION,
    ExampleRecord,
    Manifest,
    MetricsFile,
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
            raise DataError(f"{path}:{lineno}: not a valid example record: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}") from None
        good_bytes += len(raw) + 1
    return records


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"field '{'.'.join(str(part) for part in first['loc']) or '(top level)'}': {first['msg']}"


class PredictionWriter:
    """Appends example records to predictions.jsonl, one flushed line each, so a kill loses nothing finished."""

    def __init__(self, path: Path, fsync: bool = False):
        self.path = path
        self.fsync = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("a", encoding="utf-8")

    def append(self, record: ExampleRecord) -> None:
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()
        if self.fsync:
            os.fsync(self._handle.fileno())

    def extend(self, records: Iterable[ExampleRecord]) -> None:
        for record in records:
            self.append(record)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> PredictionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class RunDirectory:
    """A run directory on disk: manifest.json, predictions.jsonl, metrics.json."""

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

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    def write_manifest(self, manifest: Manifest) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(self.manifest_path, manifest.model_dump_json(indent=2) + "\n")

    def read_manifest(self) -> Manifest:
        if not self.manifest_path.is_file():
            raise EvalsuiteError(
                f"{self.path} is not a run directory (no {MANIFEST_FILE})",
                hint="pass a directory written by `evalsuite run` or `evalsuite score`",
            )
        try:
            obj = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{self.manifest_path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise DataError(f"{self.manifest_path}: expected a JSON object, got {type(obj).__name__}")
        _check_version(obj.get("schema_version"), str(self.manifest_path))
        try:
            return Manifest.model_validate(obj)
        except ValidationError as exc:
            raise DataError(f"{self.manifest_path}: not a valid run manifest: {_first_error(exc)}", hint="restore the manifest written by `evalsuite run`, or run again into a new -o directory") from None

    def read_predictions(self, *, repair: bool = False) -> list[ExampleRecord]:
        return read_predictions(self.predictions_path, repair=repair)

    def writer(self, *, fresh: bool = False) -> PredictionWriter:
        """A writer appending to predictions.jsonl; `fresh` starts the file over."""
        self.path.mkdir(parents=True, exist_ok=True)
        if fresh and self.predictions_path.exists():
            self.predictions_path.unlink()
        return PredictionWriter(self.predictions_path)

    def write_metrics(self, metrics: MetricsFile) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(self.metrics_path, metrics.model_dump_json(indent=2) + "\n")

    def read_metrics(self) -> MetricsFile:
        try:
            return MetricsFile.model_validate_json(self.metrics_path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise DataError(f"{self.metrics_path}: not a valid metrics file: {_first_error(exc)}", hint="rebuild it with `evalsuite score`") from None
        except FileNotFoundError:
            raise EvalsuiteError(f"{self.path} has no {METRICS_FILE}", hint="run `evalsuite score` on it") from None
