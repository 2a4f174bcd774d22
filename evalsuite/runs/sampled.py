"""A sampled run's records (K per question) as one row per question: avg@K, maj@K and pass@k of every metric.

Questions are the unit downstream (metrics.json intervals, tables, paired tests): evalsuite.metrics.samples
explains the metrics. Every column is a function of the multiset of each question's samples: questions come in id
order, whatever order the file holds them in, and no value reads a sample's label (the `sample` index): the spread
a table shows as "± sd" is estimated from each question's multiset of samples too. A run either samples every record
or none; a mix is an error naming the first of each.

A question holding fewer samples than the run's K (a run cut off, or still going) has avg@K over the samples it
has, and no maj@K or pass@k for k above its count (NaN): maj@n and pass@n of fewer samples are other statistics, and
scoring them 0 would read as wrong answers. metrics.json counts the questions each column leaves out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.metrics.registry import get_metric, get_normalizer, is_registered
from evalsuite.metrics.samples import avg_at_k, maj_at_k, pass_at_k, pass_ks, sample_spread
from evalsuite.runs.schema import ExampleRecord
from evalsuite.tasks.registry import get_task


@dataclass
class SampledTask:
    """One task of a sampled run: per question (in id order) each derived metric, and each metric's spread."""

    ids: np.ndarray
    failed: np.ndarray  # every sample of the question failed
    metrics: dict[str, np.ndarray]  # NaN: not computable for that question (fewer samples than the column needs)
    samples: int  # K: the most samples any question has
    incomplete: int  # questions with fewer than K samples (a run still going, or resumed)
    # each metric's sd of a one-sample run's mean (evalsuite.metrics.samples.sample_spread): metrics.json's spread,
    # and the "± sd" tables show beside an avg@K (of one benchmark, or of an average over benchmarks)
    spread: dict[str, float]

    def left_out(self) -> dict[str, int]:
        """Each column's count of questions it has no value for (too few samples), where there are any."""
        return {name: int(np.isnan(v).sum()) for name, v in sorted(self.metrics.items()) if np.isnan(v).any()}


def is_sampled(records: Sequence[ExampleRecord]) -> bool:
    """Whether the records are a sampled run's; a run mixing sampled and greedy records is an error."""
    sampled = next((r for r in records if r.sample is not None), None)
    greedy = next((r for r in records if r.sample is None), None)
    if sampled is not None and greedy is not None:
        raise DataError(
            f"the run mixes sampled records ({sampled.task}/{sampled.id} sample {sampled.sample}) and greedy "
            f"ones ({greedy.task}/{greedy.id})",
            hint="keep sampled (--samples K) and greedy runs in separate run directories",
        )
    return sampled is not None


def _normalizer(task: str):
    try:
        return get_normalizer(get_task(task).normalization)
    except EvalsuiteError:
        return get_normalizer("squad")


def _by_question(task: str, rows: Sequence[ExampleRecord]) -> dict[str, dict[int, ExampleRecord]]:
    """id → sample index → record, ids sorted; refuses a sample recorded twice and a sample index that no run of
    these records could have written (every run numbers its K samples 0..K−1, so an index is below the number of
    distinct indices), before anything is sized by an index."""
    by_id: dict[str, dict[int, ExampleRecord]] = {}
    labels: set[int] = set()
    for row in rows:
        samples = by_id.setdefault(row.id, {})
        index = int(row.sample or 0)
        if index in samples:
            raise DataError(
                f"{task}/{row.id}: sample {index} is recorded twice",
                hint="each sample of a question is recorded once; rerun the run into a fresh directory",
            )
        samples[index] = row
        labels.add(index)
    if labels and (max(labels) >= len(labels) or min(labels) < 0):
        bad = max(labels) if min(labels) >= 0 else min(labels)
        holder = next(q for q, s in by_id.items() if bad in s)
        raise DataError(
            f"{task}/{holder}: sample index {bad} is outside 0..{len(labels) - 1} (the task's records hold "
            f"{len(labels)} distinct sample indices)",
            hint="a sampled run numbers each question's K samples 0..K-1; this file was not written so",
        )
    return {question: by_id[question] for question in sorted(by_id)}


def sampled_task(task: str, rows: Sequence[ExampleRecord]) -> SampledTask:
    """Aggregate one task's sampled records per question (failed samples and missing values score 0)."""
    by_id = _by_question(task, rows)
    ids = list(by_id)
    k = max(len(samples) for samples in by_id.values())
    names = sorted({name for row in rows for name in row.metrics})
    normalize = _normalizer(task)
    present = np.array([len(by_id[q]) for q in ids])
    metrics: dict[str, np.ndarray] = {}
    spread: dict[str, float] = {}
    answers = [[None if r.prediction is None else normalize(r.prediction) for r in by_id[q].values()] for q in ids]
    for name in names:
        aggregates = get_metric(name).over_samples or () if is_registered(name) else ("avg",)
        per_question = [[_counted(r, name) for r in by_id[q].values()] for q in ids]
        # (questions × K): each question's samples, then NaN; no column is a sample label
        scores = np.full((len(ids), k), np.nan)
        for q, values in enumerate(per_question):
            scores[q, : len(values)] = values
        metrics[f"{name}_avg"] = avg_at_k(scores)
        spread[name] = sample_spread(scores)
        if "maj" in aggregates:
            metrics[f"{name}_maj"] = np.array(
                [maj_at_k(answers[q], per_question[q]) if present[q] == k else np.nan for q in range(len(ids))]
            )
        if "pass" in aggregates:
            correct = np.nansum(scores, axis=1)
            for kk in pass_ks(k):
                column = np.full(len(ids), np.nan)
                enough = present >= kk
                column[enough] = pass_at_k(present[enough], correct[enough], kk)
                metrics[f"{name}_pass@{kk}"] = column
    failed = np.array([all(r.status == "failed" for r in by_id[q].values()) for q in ids])
    return SampledTask(np.array(ids, dtype=str), failed, metrics, k, int(np.sum(present < k)), spread)


def _counted(record: ExampleRecord, name: str) -> float:
    """A sample's value of a metric: its value, 0 when it has none."""
    return record.metrics.get(name, 0.0)
