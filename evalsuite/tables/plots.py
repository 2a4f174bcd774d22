"""Plots of a comparison: per-benchmark bars with CI whiskers, and a forest plot of paired differences (PNG or SVG)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.plot import figure, percent_scale, save_figure
from evalsuite.stats import Comparison
from evalsuite.tasks.registry import task_label


def plot_bars(comparison: Comparison, order: Sequence[str], path: str | Path) -> Path:
    """Grouped bars: one group per benchmark, one bar per system, whiskers at the 95% interval of each mean."""
    tasks = comparison.tasks
    scale = percent_scale(comparison.metric)
    width = 0.8 / max(len(order), 1)
    fig = figure(max(5.0, 0.6 * len(tasks) * max(1, len(order)) + 2), 3.6 + 0.25 * len(order))
    ax = fig.add_subplot()
    x = np.arange(len(tasks))
    for i, system in enumerate(order):
        ests = [comparison.means.get((system, t)) for t in tasks]
        means = np.array([e.mean * scale if e else np.nan for e in ests])
        # a percentile interval of very few examples can miss its own mean; matplotlib refuses negative whiskers
        low = np.array([max(e.mean - e.ci_low, 0.0) * scale if e else 0.0 for e in ests])
        high = np.array([max(e.ci_high - e.mean, 0.0) * scale if e else 0.0 for e in ests])
        ax.bar(
            x + (i - (len(order) - 1) / 2) * width, means, width, yerr=np.vstack([low, high]), capsize=3, label=system
        )
    ax.set_xticks(x, [task_label(t) for t in tasks])
    ax.set_ylabel(f"{comparison.metric}" + (" (%)" if scale == 100 else ""))
    ax.set_title(f"{comparison.metric} per benchmark, {comparison.confidence:.0%} intervals", fontsize="medium")
    fig.legend(loc="outside lower center", fontsize="small", ncols=1 if len(order) > 3 else len(order))
    return save_figure(fig, path)


def plot_forest(comparison: Comparison, path: str | Path) -> Path:
    """Forest plot: each system's paired difference from the baseline per benchmark, with its bootstrap interval."""
    rows = [d for t in comparison.tasks for s in comparison.systems if (d := comparison.differences.get((s, t)))]
    rows += list(comparison.average_differences.values())
    if not rows:
        raise EvalsuiteError("nothing to plot: no system shares a benchmark with the baseline")
    scale = percent_scale(comparison.metric)
    labels = [f"{d.system} · {task_label(d.task) if d.task in comparison.tasks else 'avg ' + d.task}" for d in rows]
    fig = figure(4.0 + 0.07 * max(len(label) for label in labels), 1.4 + 0.35 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1]
    diffs = np.array([d.difference for d in rows]) * scale
    err = (
        np.maximum(np.array([[d.difference - d.ci_low for d in rows], [d.ci_high - d.difference for d in rows]]), 0.0)
        * scale
    )
    colors = ["tab:red" if d.significant else "tab:gray" for d in rows]
    for i, color in enumerate(colors):
        ax.errorbar(diffs[i], y[i], xerr=err[:, i : i + 1], fmt="o", color=color, capsize=3)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(y, labels, fontsize="small")
    ax.set_xlabel(
        f"Δ {comparison.metric}"
        + (" (points)" if scale == 100 else "")
        + f", {comparison.confidence:.0%} paired-bootstrap interval"
    )
    fig.suptitle(f"vs baseline {comparison.baseline} (red: significant after Holm)", fontsize="medium")
    return save_figure(fig, path)


def plot_top_entries(
    series: Mapping[str, Mapping[str, Any]],
    tasks: Sequence[str],
    metric: str,
    path: str | Path,
    title: str = "",
    tick_labels: Sequence[str] | None = None,
) -> Path | None:
    """Grouped bars of several systems' stored summaries (`series`: label → task → an object with mean, ci_low and
    ci_high, e.g. a metrics.json summary): one group per task (labelled by `tick_labels`, default the task's name),
    whiskers at each 95% interval. The title wraps to the figure's width, so it is never cut. None when empty."""
    if not series or not tasks:
        return None
    scale = percent_scale(metric)
    width = 0.8 / len(series)
    fig = figure(max(5.0, 0.55 * len(tasks) * len(series) + 2), 3.6 + 0.25 * len(series))
    # Text wraps to the figure's width (about 11 characters per inch at these font sizes): a long title or entry
    # name is never cut at the image's edges.
    width_chars = int(fig.get_figwidth() * 11)
    ax = fig.add_subplot()
    x = np.arange(len(tasks))
    for i, (label, by_task) in enumerate(series.items()):
        values = [by_task.get(t) for t in tasks]
        means = np.array([v.mean * scale if v is not None else np.nan for v in values])
        low = np.array([max(v.mean - v.ci_low, 0.0) * scale if v is not None else 0.0 for v in values])
        high = np.array([max(v.ci_high - v.mean, 0.0) * scale if v is not None else 0.0 for v in values])
        # `$` starts matplotlib's math text: a submitted name is drawn as typed
        ax.bar(
            x + (i - (len(series) - 1) / 2) * width,
            means,
            width,
            yerr=np.vstack([low, high]),
            capsize=3,
            label=textwrap.fill(label, width_chars).replace("$", r"\$"),
        )
    ax.set_xticks(x, list(tick_labels) if tick_labels is not None else [task_label(t) for t in tasks])
    ax.set_ylabel(metric + (" (%)" if scale == 100 else ""))
    ax.set_title(textwrap.fill(title or f"{metric} per benchmark, 95% intervals", width_chars), fontsize="medium")
    fig.legend(loc="outside lower center", fontsize="small", ncols=1)
    return save_figure(fig, path)
