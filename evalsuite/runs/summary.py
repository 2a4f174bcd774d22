"""Aggregate example records into metrics.json: per-task means with 95% CIs and group macro-averages."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import ExampleRecord, MetricsFile, MetricSummary, TaskSummary
from evalsuite.tasks.registry import get_task

# Metrics averaged in the group rows (general / multi-hop / all) of metrics.json.
GROUP_METRICS = ("em", "cover_em", "f1")


# The per-run CI is a seeded percentile bootstrap: unlike a normal/t interval it never leaves the metric's range
# (an EM of 0.024 on 125 questions must not get a negative lower bound).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def mean_ci(values: np.ndarray, confidence: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> MetricSummary:
    """Mean with a seeded percentile-bootstrap confidence interval (collapses to the mean for n < 2)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return MetricSummary(mean=mean, ci_low=mean, ci_high=mean)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return MetricSummary(mean=mean, ci_low=float(low), ci_high=float(high))


def _category(task_name: str) -> str | None:
    try:
        return get_task(task_name).category
    except EvalsuiteError:
        return None  # a task from another registry still gets its own row, just no group


def summarize(records: list[ExampleRecord]) -> MetricsFile:
    """Per-task summaries over all examples (failed ones score 0 and are counted), and macro-averages of task means."""
    by_task: dict[str, list[ExampleRecord]] = defaultdict(list)
    for record in records:
        by_task[record.task].append(record)
    tasks: dict[str, TaskSummary] = {}
    for task, rows in by_task.items():
        names = sorted({name for row in rows for name in row.metrics})
        metrics = {
            name: mean_ci(np.array([row.metrics.get(name, 0.0) for row in rows], dtype=float)) for name in names
        }
        tasks[task] = TaskSummary(n=len(rows), n_failed=sum(r.status == "failed" for r in rows), metrics=metrics)
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
            for name in GROUP_METRICS
            if all(name in tasks[t].metrics for t in members)
        }
    return MetricsFile(tasks=tasks, averages=averages, extra={"ci": {"method": "percentile bootstrap", "resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "confidence": 0.95}})
