"""A sampled run's records (K per question) as one row per question: avg@K, maj@K and pass@k of every metric.

Questions are the unit downstream (metrics.json intervals, tables, paired tests): evalsuite.metrics.samples
explains the metrics. A run either samples every record or none; a mix is an error naming the first of each.
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
    """One task of a sampled run: per question (first-seen order) each derived metric, and each metric's spread."""

    ids: np.ndarray
    failed: np.ndarray  # every sample of the question failed
    metrics: dict[str, np.ndarray]
    samples: int  # K: the most samples any question has
    incomplete: int  # questions with fewer than K samples (a run still going, or resumed)
    spread: dict[str, float]
    # each metric's mean over questions per sample index (K values): per seed in a multi-seed run, whose sd over
    # seeds tables show beside the mean (of one benchmark, or of an average over benchmarks)
    sample_means: dict[str, np.ndarray]


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


def sampled_task(task: str, rows: Sequence[ExampleRecord]) -> SampledTask:
    """Aggregate one task's sampled records per question (failed samples and missing values score 0)."""
    by_id: dict[str, dict[int, ExampleRecord]] = {}
    for row in rows:
        samples = by_id.setdefault(row.id, {})
        if row.sample in samples:
            raise DataError(
                f"{task}/{row.id}: sample {row.sample} is recorded twice",
                hint="each sample of a question is recorded once; rerun the run into a fresh directory",
            )
        samples[int(row.sample or 0)] = row
    k = max(max(s) + 1 for s in by_id.values())
    ids = list(by_id)
    names = sorted({name for row in rows for name in row.metrics})
    normalize = _normalizer(task)
    # (questions × K) per-sample scores, NaN where a sample has not been run yet
    matrix = {name: np.full((len(ids), k), np.nan) for name in names}
    answers: list[list[str | None]] = []
    for q, question in enumerate(ids):
        samples = by_id[question]
        answers.append(
            [None if samples[j].prediction is None else normalize(samples[j].prediction) for j in sorted(samples)]
        )
        for j, row in samples.items():
            for name in names:
                matrix[name][q, j] = row.metrics.get(name, 0.0)
    present = np.array([len(by_id[q]) for q in ids])
    metrics: dict[str, np.ndarray] = {}
    spread: dict[str, float] = {}
    sample_means: dict[str, np.ndarray] = {}
    for name in names:
        scores = matrix[name]
        metrics[f"{name}_avg"] = avg_at_k(scores)
        ordered = [scores[q, sorted(by_id[question])] for q, question in enumerate(ids)]
        metrics[f"{name}_maj"] = np.array([maj_at_k(answers[q], ordered[q]) for q in range(len(ids))])
        spread[name] = sample_spread(scores)
        sample_means[name] = np.nanmean(scores, axis=0)
        if is_registered(name) and get_metric(name).kind == "binary":
            correct = np.nansum(scores, axis=1)
            for kk in pass_ks(k):
                values = np.full(len(ids), np.nan)
                enough = present >= kk
                values[enough] = pass_at_k(present[enough], correct[enough], kk)
                metrics[f"{name}_pass@{kk}"] = values
    failed = np.array([all(r.status == "failed" for r in by_id[q].values()) for q in ids])
    return SampledTask(np.array(ids, dtype=str), failed, metrics, k, int(np.sum(present < k)), spread, sample_means)
