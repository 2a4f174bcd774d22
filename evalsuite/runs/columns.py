"""Per-example scores as columns, cached by the content hash of the predictions.jsonl they came from.

Parsing predictions.jsonl validates every trajectory; a table only needs each example's task, id, status and
metric values. `write_scores` stores those as numpy arrays when a run is summarized, in the local cache folder
(`evalsuite.files.cache_root()/scores/<sha256 of predictions.jsonl>.v<format>.npz`); `read_scores` hashes
predictions.jsonl as it is now and returns the columns cached for exactly those bytes, else None, so a reader
parses predictions.jsonl whenever they are missing. No size or modification time is trusted (`cp -p`, `rsync -t`
and `tar x` restore an edited file's mtime), and nothing inside a run directory is read as a cache: the cache
never crosses a trust boundary (issue 26).
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evalsuite.files import cache_root
from evalsuite.runs.sampled import is_sampled, sampled_task
from evalsuite.runs.schema import PREDICTIONS_FILE, ExampleRecord

log = logging.getLogger(__name__)
_METRIC_PREFIX = "metric:"
_SPREAD_PREFIX = "spread:"
# 2: failed examples are 0 on every metric; cached by content hash outside the run directory. 3: sampled runs' means
# per sample index. 4: sampled columns in id order, maj@K ties scored as the tied answers' mean, short questions NaN.
# 5: a sampled run's spread per metric instead of its per-label means
_FORMAT = 5


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
    # Counts the writer recorded with the columns (tables/golds.py: examples not in their registry split)
    counts: dict[str, int] = field(default_factory=dict)
    # a sampled run's task → per-sample metric → the sd of a one-sample run's mean, from each question's multiset of
    # samples (evalsuite.metrics.samples.sample_spread), never from which sample a label calls seed j
    spreads: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: Sequence[ExampleRecord]) -> ScoreColumns:
        by_task: dict[str, list[ExampleRecord]] = {}
        for record in records:
            by_task.setdefault(record.task, []).append(record)
        if is_sampled(records):
            parts = {task: sampled_task(task, rows) for task, rows in by_task.items()}
            return cls(
                {t: TaskColumns(p.ids, p.failed, p.metrics) for t, p in parts.items()},
                max(p.samples for p in parts.values()),
                spreads={t: p.spread for t, p in parts.items()},
            )
        tasks = {}
        for task, rows in by_task.items():
            names = sorted({name for row in rows for name in row.metrics})
            tasks[task] = TaskColumns(
                ids=np.array([row.id for row in rows], dtype=str),
                failed=np.array([row.status == "failed" for row in rows], dtype=bool),
                # A failed example counts 0 on every metric whatever it carries (runs/summary.py's counted_value).
                metrics={
                    name: np.array(
                        [0.0 if row.status == "failed" else row.metrics.get(name, np.nan) for row in rows], dtype=float
                    )
                    for name in names
                },
            )
        return cls(tasks)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_path(source_sha256: str, basis: str = "") -> Path:
    """Where the columns of a predictions.jsonl with this content hash live: the local cache folder, never the run
    directory, so a run directory (or a submission) copied from someone else brings no cache to be trusted.
    `basis` names what else the scores were computed from (tables/golds.py: the registry gold files a table
    rescored against); "" is the scores as stored in predictions.jsonl."""
    key = source_sha256 if not basis else hashlib.sha256(f"{source_sha256}|{basis}".encode()).hexdigest()
    return cache_root() / "scores" / f"{key}.v{_FORMAT}.npz"


def write_scores(
    run_dir: str | Path, records: Sequence[ExampleRecord], basis: str = "", counts: dict[str, int] | None = None
) -> Path | None:
    """Cache the columns of the records now in run_dir/predictions.jsonl under its content hash; None (and nothing
    written) without one."""
    predictions = Path(run_dir) / PREDICTIONS_FILE
    if not predictions.is_file():
        return None
    source = _sha256(predictions)
    arrays: dict[str, np.ndarray] = {"format": np.array(_FORMAT), "source_sha256": np.array(source)}
    columns = ScoreColumns.from_records(records)
    arrays["tasks"] = np.array(list(columns.tasks), dtype=str)
    arrays["samples"] = np.array(columns.samples)
    for name, count in (counts or {}).items():
        arrays[f"count:{name}"] = np.array(count)
    for t, (task, data) in enumerate(columns.tasks.items()):
        arrays[f"{t}/ids"] = data.ids
        arrays[f"{t}/failed"] = data.failed
        for name, values in data.metrics.items():
            arrays[f"{t}/{_METRIC_PREFIX}{name}"] = values
        for name, value in columns.spreads.get(task, {}).items():
            arrays[f"{t}/{_SPREAD_PREFIX}{name}"] = np.array(value)
    target = cache_path(source, basis)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # A name of its own per writer: two processes caching the same content never write one temporary file.
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp.npz")
        np.savez(tmp, allow_pickle=True, **arrays)  # numpy's default, named so mypy does not match **arrays to it
        os.replace(tmp, target)
    except OSError as exc:  # a cache is an optimisation: a read-only or full cache folder only costs a re-parse
        log.warning("%s: cannot cache the score columns (%s)", target, exc)
        return None
    return target


def read_scores(run_dir: str | Path, basis: str = "") -> ScoreColumns | None:
    """The cached columns of run_dir/predictions.jsonl as its bytes are now (looked up by content hash), else None:
    never cached, or unreadable. Whatever the run directory holds besides predictions.jsonl (an old `scores.npz`,
    a forged one) is not read."""
    predictions = Path(run_dir) / PREDICTIONS_FILE
    if not predictions.is_file():
        return None
    source = _sha256(predictions)
    path = cache_path(source, basis)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"]) != _FORMAT or str(data["source_sha256"]) != source:
                return None
            tasks, spreads = {}, {}
            for t, task in enumerate(data["tasks"].tolist()):
                prefix, spread = f"{t}/{_METRIC_PREFIX}", f"{t}/{_SPREAD_PREFIX}"
                metrics = {key[len(prefix) :]: data[key] for key in data.files if key.startswith(prefix)}
                tasks[task] = TaskColumns(ids=data[f"{t}/ids"], failed=data[f"{t}/failed"], metrics=metrics)
                if by_metric := {key[len(spread) :]: float(data[key]) for key in data.files if key.startswith(spread)}:
                    spreads[task] = by_metric
            counts = {key[len("count:") :]: int(data[key]) for key in data.files if key.startswith("count:")}
            return ScoreColumns(tasks, int(data["samples"]), counts, spreads)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        log.warning("%s: unreadable (%s); reading %s instead", path, exc, PREDICTIONS_FILE)
        return None
