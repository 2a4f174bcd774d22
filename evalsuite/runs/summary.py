"""Aggregate example records into metrics.json: per-task means with 95% CIs and group macro-averages."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.registry import averaged_metrics, get_metric, is_registered
from evalsuite.runs.sampled import SampledTask, is_sampled, sampled_task
from evalsuite.runs.schema import ExampleRecord, MetricsFile, MetricSummary, TaskSummary
from evalsuite.stats import intervals
from evalsuite.stats.resample import bootstrap_means, percentile_interval, stream
from evalsuite.tasks.registry import get_task


def mean_ci(
    values: np.ndarray,
    confidence: float = 0.95,
    resamples: int = intervals.INTERVAL_RESAMPLES,
    seed: int = intervals.INTERVAL_SEED,
    key: str = "",
) -> MetricSummary:
    """Mean with a seeded percentile-bootstrap interval of any scores (judge verdicts, ...); n < 2 gives a point.

    Run metrics go through `summarize`, which picks the interval each metric declares (evalsuite.stats.intervals).
    """
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        mean = float(values.mean()) if values.size else float("nan")
        return MetricSummary(mean=mean, ci_low=mean, ci_high=mean)
    low, high = percentile_interval(bootstrap_means(values[None, :], resamples, stream(seed, key)), confidence)
    return MetricSummary(mean=float(values.mean()), ci_low=float(low[0]), ci_high=float(high[0]))


def _category(task_name: str) -> str | None:
    try:
        return get_task(task_name).category
    except EvalsuiteError:
        return None  # a task from another registry still gets its own row, just no group


def task_metric_summaries(task: str, rows: list[ExampleRecord]) -> dict[str, MetricSummary]:
    """Each metric's mean and interval on one task, over the examples it was computed for (failed examples score 0 and
    count): an example without the metric was not computed, not 0 (an imported item that records no retrieval)."""
    names = sorted({name for row in rows for name in row.metrics})
    summaries = {}
    for name in names:
        values = np.array([counted_value(row, name) for row in rows if is_counted(row, name)], dtype=float)
        (interval,) = intervals.mean_intervals(name, values, task)
        summaries[name] = MetricSummary(mean=interval.mean, ci_low=interval.low, ci_high=interval.high)
    return summaries


def counted_value(record: ExampleRecord, metric: str) -> float:
    """What one example counts for in a mean: 0 when it failed, whatever metrics it carries (a failed record is
    not an answer), else its value, 0 when it has none."""
    return 0.0 if record.status == "failed" else record.metrics.get(metric, 0.0)


def is_counted(record: ExampleRecord, metric: str) -> bool:
    """Whether an example counts in a metric's mean: it failed (0), or the metric was computed for it."""
    return record.status == "failed" or metric in record.metrics


def not_computed(rows: list[ExampleRecord]) -> dict[str, int]:
    """Per metric some examples hold: how many of the others it was not computed for (left out of its mean)."""
    names = sorted({name for row in rows for name in row.metrics})
    counts = {name: sum(not is_counted(row, name) for row in rows) for name in names}
    return {name: count for name, count in counts.items() if count}


def metric_versions(names: set[str]) -> dict[str, int]:
    """Each registered metric among `names` with its definition version (unregistered ones, such as novelty counts
    added outside the scorer, are summarized but not versioned)."""
    return {name: get_metric(name).version for name in sorted(names) if is_registered(name)}


def summarize(records: list[ExampleRecord]) -> MetricsFile:
    """Per-task summaries over all examples (failed ones score 0 and are counted), macro-averages of task means
    for the metrics that declare them, and the version of every registered metric the records hold."""
    by_task: dict[str, list[ExampleRecord]] = defaultdict(list)
    for record in records:
        by_task[record.task].append(record)
    tasks: dict[str, TaskSummary] = {}
    sampled = is_sampled(records)
    samples: dict[str, SampledTask] = {}
    for task, rows in by_task.items():
        if sampled:
            # one row per question: K samples are never counted as K questions (evalsuite.runs.sampled)
            samples[task] = part = sampled_task(task, rows)
            tasks[task] = TaskSummary(
                n=part.ids.size, n_failed=int(part.failed.sum()), metrics=_column_summaries(task, part.metrics)
            )
            continue
        tasks[task] = TaskSummary(
            n=len(rows), n_failed=sum(r.status == "failed" for r in rows), metrics=task_metric_summaries(task, rows)
        )
    groups: dict[str, list[str]] = {"general": [], "multi-hop": [], "all": list(tasks)}
    for task in tasks:
        category = _category(task)
        if category in groups:
            groups[category].append(task)
    averages: dict[str, dict[str, float]] = {}
    for group, members in groups.items():
        if not members:
            continue
        averages[group] = {
            name: float(np.mean([tasks[t].metrics[name].mean for t in members]))
            for name in averaged_metrics(tasks[members[0]].metrics)
            if all(name in tasks[t].metrics for t in members)
        }
    ci = {
        "binary": intervals.method_name("wilson"),
        "continuous": intervals.method_name("bootstrap"),
        "bounded": intervals.method_name("effective_wilson"),
        "over_samples": intervals.method_name("cluster_wilson"),
        "resamples": intervals.INTERVAL_RESAMPLES,
        "seed": intervals.INTERVAL_SEED,
        "confidence": intervals.CONFIDENCE,
        "failed_examples": "score 0 and count in n",
    }
    versions = metric_versions({name for summary in tasks.values() for name in summary.metrics})
    extra: dict[str, object] = {"ci": ci}
    if not sampled and (missing := {t: m for t, rows in by_task.items() if (m := not_computed(rows))}):
        extra["not_computed"] = {"unit": "examples left out of the metric's mean: not computed, not 0", **missing}
    if sampled:
        extra["samples"] = {
            "k": max(p.samples for p in samples.values()),
            "unit": "question: avg@K, maj@K and pass@k per question; intervals over questions",
            "incomplete_questions": {t: p.incomplete for t, p in samples.items() if p.incomplete},
            "short_questions": "a question with fewer than K samples: avg@K over the samples it has; no maj@K, nor "
            "pass@k for k above its count (left out of that column's mean and n, counted in left_out)",
            "left_out": {t: left for t, p in samples.items() if (left := p.left_out())},
            "spread": {t: p.spread for t, p in samples.items()},
        }
    return MetricsFile(tasks=tasks, averages=averages, metric_versions=versions, extra=extra)


def _column_summaries(task: str, columns: dict[str, np.ndarray]) -> dict[str, MetricSummary]:
    """Each per-question column's mean and interval over the questions it has a value for (NaN: a question with
    too few samples for it, counted in metrics.json's extra.samples.left_out); a column with none is left out."""
    summaries = {}
    for name in sorted(columns):
        values = columns[name][~np.isnan(columns[name])]
        if values.size == 0:
            continue
        (interval,) = intervals.mean_intervals(name, values, task)
        summaries[name] = MetricSummary(mean=interval.mean, ci_low=interval.low, ci_high=interval.high)
    return summaries
