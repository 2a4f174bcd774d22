"""Per-example scores as columns (`scores.npz` beside predictions.jsonl): what tables and tests read.

Parsing predictions.jsonl validates every trajectory; a table only needs each example's task, id, status and
metric values. `write_scores` stores those as numpy arrays when a run is summarized, together with the size,
modification time and SHA-256 of the predictions.jsonl they came from; `read_scores` returns them only while
predictions.jsonl is still that file (same size and mtime, or else the same hash), and None otherwise, so a reader
falls back to predictions.jsonl whenever the columns are missing or stale.
"""

from __future__ import annotations

import hashlib
import logging
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evalsuite.runs.sampled import is_sampled, sampled_task
from evalsuite.runs.schema import PREDICTIONS_FILE, SCORES_FILE, ExampleRecord

log = logging.getLogger(__name__)
_METRIC_PREFIX = "metric:"
_FORMAT = 1


@dataclass
class TaskColumns:
    """One task's examples in file order: ids, failed flags and each metric's values (NaN where absent)."""

    ids: np.ndarray
    failed: np.ndarray
    metrics: dict[str, np.ndarray]


@dataclass
class ScoreColumns:
    """A run's per-example scores by task."""

    tasks: dict[str, TaskColumns]
    # K of a sampled run, whose columns hold one row per question (avg@K, maj@K, pass@k: evalsuite.runs.sampled)
    samples: int = 1

    @classmethod
    def from_records(cls, records: Sequence[ExampleRecord]) -> ScoreColumns:
        by_task: dict[str, list[ExampleRecord]] = {}
        for record in records:
            by_task.setdefault(record.task, []).append(record)
        if is_sampled(records):
            parts = {task: sampled_task(task, rows) for task, rows in by_task.items()}
            return cls({t: TaskColumns(p.ids, p.failed, p.metrics) for t, p in parts.items()},
                       max(p.samples for p in parts.values()))
        tasks = {}
        for task, rows in by_task.items():
            names = sorted({name for row in rows for name in row.metrics})
            tasks[task] = TaskColumns(
                ids=np.array([row.id for row in rows], dtype=str),
                failed=np.array([row.status == "failed" for row in rows], dtype=bool),
                metrics={name: np.array([row.metrics.get(name, np.nan) for row in rows], dtype=float) for name in names},
            )
        return cls(tasks)


def _fingerprint(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_scores(run_dir: str | Path, records: Sequence[ExampleRecord]) -> Path | None:
    """Write scores.npz for the records now in run_dir/predictions.jsonl; None (and nothing written) without one."""
    run_dir = Path(run_dir)
    predictions = run_dir / PREDICTIONS_FILE
    if not predictions.is_file():
        return None
    size, mtime = _fingerprint(predictions)
    arrays: dict[str, np.ndarray] = {
        "format": np.array(_FORMAT), "source_size": np.array(size), "source_mtime_ns": np.array(mtime),
        "source_sha256": np.array(_sha256(predictions)),
    }
    columns = ScoreColumns.from_records(records)
    arrays["tasks"] = np.array(list(columns.tasks), dtype=str)
    arrays["samples"] = np.array(columns.samples)
    for t, (task, data) in enumerate(columns.tasks.items()):
        arrays[f"{t}/ids"] = data.ids
        arrays[f"{t}/failed"] = data.failed
        for name, values in data.metrics.items():
            arrays[f"{t}/{_METRIC_PREFIX}{name}"] = values
    target = run_dir / SCORES_FILE
    tmp = target.with_name(target.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, target)
    return target


def read_scores(run_dir: str | Path) -> ScoreColumns | None:
    """The run's scores.npz when it describes the current predictions.jsonl, else None (missing, stale or unreadable)."""
    run_dir = Path(run_dir)
    path, predictions = run_dir / SCORES_FILE, run_dir / PREDICTIONS_FILE
    if not path.is_file() or not predictions.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"]) != _FORMAT:
                return None
            size, mtime = _fingerprint(predictions)
            if int(data["source_size"]) != size:
                return None
            if int(data["source_mtime_ns"]) != mtime and str(data["source_sha256"]) != _sha256(predictions):
                return None
            tasks = {}
            for t, task in enumerate(data["tasks"].tolist()):
                prefix = f"{t}/{_METRIC_PREFIX}"
                metrics = {key[len(prefix):]: data[key] for key in data.files if key.startswith(prefix)}
                tasks[task] = TaskColumns(ids=data[f"{t}/ids"], failed=data[f"{t}/failed"], metrics=metrics)
            return ScoreColumns(tasks, int(data["samples"]) if "samples" in data.files else 1)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        log.warning("%s: unreadable (%s); reading %s instead", path, exc, PREDICTIONS_FILE)
        return None
