"""Aggregate example records into metrics.json: per-task means with 95% CIs and group macro-averages."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from scipy import stats as scipy_stats

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import ExampleRecord, MetricsFile, MetricSummary, TaskSummary
from evalsuite.tasks.registry import get_task

# Metrics averaged in the group rows (general / multi-hop / all) of metrics.json.
GROUP_METRICS = ("em", "cover_em", "f1")


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> MetricSummary:
    """Mean with a Student-t confidence interval (the interval collapses to the mean for n < 2 or zero variance)."""
    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return MetricSummary(mean=mean, ci_low=mean, ci_high=mean)
    sem = float(np.std(values, ddof=1)) / math.sqrt(n)
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sem
    return MetricSummary(mean=mean, ci_low=mean - half, ci_high=mean + half)


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
    return MetricsFile(tasks=tasks, averages=averages)
