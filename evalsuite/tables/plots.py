"""Plots of a comparison: per-benchmark bars with CI whiskers, and a forest plot of paired differences (PNG or SVG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evalsuite.errors import EvalsuiteError, require
from evalsuite.stats import Comparison
from evalsuite.tables.layouts import is_percent, task_label

PLOT_FORMATS = (".png", ".svg")


def _figure(width: float, height: float):
    require("matplotlib", "site", "plotting tables")
    # The object-oriented Figure needs no pyplot state or display backend.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _save(fig, path: Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in PLOT_FORMATS:
        raise EvalsuiteError(f"cannot write a plot to {path}: unknown format {path.suffix or '(none)'}",
                             hint=f"name the file with one of {', '.join(PLOT_FORMATS)}")
    import matplotlib

    # No date and a fixed id salt keep SVG output byte-stable across runs.
    metadata = {"Date": None} if path.suffix.lower() == ".svg" else {}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with matplotlib.rc_context({"svg.hashsalt": "evalsuite"}):
            fig.savefig(path, dpi=150, metadata=metadata)
    except OSError as exc:
        raise EvalsuiteError(f"cannot write a plot to {path}: {exc.strerror or exc}", hint="choose a writable file path") from None
    return path


def _scale(metric: str) -> float:
    return 100.0 if is_percent(metric) else 1.0


def plot_bars(comparison: Comparison, order: Sequence[str], path: str | Path) -> Path:
    """Grouped bars: one group per benchmark, one bar per system, whiskers at the 95% interval of each mean."""
    tasks = comparison.tasks
    scale = _scale(comparison.metric)
    width = 0.8 / max(len(order), 1)
    fig = _figure(max(5.0, 0.6 * len(tasks) * max(1, len(order)) + 2), 3.6 + 0.25 * len(order))
    ax = fig.add_subplot()
    x = np.arange(len(tasks))
    for i, system in enumerate(order):
        ests = [comparison.means.get((system, t)) for t in tasks]
        means = np.array([e.mean * scale if e else np.nan for e in ests])
        # a percentile interval of very few examples can miss its own mean; matplotlib refuses negative whiskers
        low = np.array([max(e.mean - e.ci_low, 0.0) * scale if e else 0.0 for e in ests])
        high = np.array([max(e.ci_high - e.mean, 0.0) * scale if e else 0.0 for e in ests])
        ax.bar(x + (i - (len(order) - 1) / 2) * width, means, width, yerr=np.vstack([low, high]), capsize=3, label=system)
    ax.set_xticks(x, [task_label(t) for t in tasks])
    ax.set_ylabel(f"{comparison.metric}" + (" (%)" if scale == 100 else ""))
    ax.set_title(f"{comparison.metric} per benchmark, {comparison.confidence:.0%} intervals", fontsize="medium")
    fig.legend(loc="outside lower center", fontsize="small", ncols=1 if len(order) > 3 else len(order))
    return _save(fig, path)


def plot_forest(comparison: Comparison, path: str | Path) -> Path:
    """Forest plot: each system's paired difference from the baseline per benchmark, with its bootstrap interval."""
    rows = [d for t in comparison.tasks for s in comparison.systems if (d := comparison.differences.get((s, t)))]
    rows += list(comparison.average_differences.values())
    if not rows:
        raise EvalsuiteError("nothing to plot: no system shares a benchmark with the baseline")
    scale = _scale(comparison.metric)
    labels = [f"{d.system} · {task_label(d.task) if d.task in comparison.tasks else 'avg ' + d.task}" for d in rows]
    fig = _figure(4.0 + 0.07 * max(len(label) for label in labels), 1.4 + 0.35 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1]
    diffs = np.array([d.difference for d in rows]) * scale
    err = np.maximum(np.array([[d.difference - d.ci_low for d in rows], [d.ci_high - d.difference for d in rows]]), 0.0) * scale
    colors = ["tab:red" if d.significant else "tab:gray" for d in rows]
    for i, color in enumerate(colors):
        ax.errorbar(diffs[i], y[i], xerr=err[:, i : i + 1], fmt="o", color=color, capsize=3)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(y, labels, fontsize="small")
    ax.set_xlabel(f"Δ {comparison.metric}" + (" (points)" if scale == 100 else "") + f", {comparison.confidence:.0%} paired-bootstrap interval")
    fig.suptitle(f"vs baseline {comparison.baseline} (red: significant after Holm)", fontsize="medium")
    return _save(fig, path)


RUN_PLOT = "metrics.png"


def run_metrics_figure(metrics, metric: str = "em", title: str = ""):
    """One run's `metric` per task as bars with the 95% interval metrics.json stores (Wilson or bootstrap), the
    n of each task under its bar; None when no task has the metric (nothing to draw)."""
    tasks = [(task, summary) for task, summary in metrics.tasks.items() if metric in summary.metrics]
    if not tasks:
        return None
    scale = _scale(metric)
    fig = _figure(max(4.0, 0.9 * len(tasks) + 2), 3.4)
    ax = fig.add_subplot()
    x = np.arange(len(tasks))
    values = [summary.metrics[metric] for _, summary in tasks]
    means = np.array([v.mean for v in values]) * scale
    # a percentile interval of very few examples can miss its own mean; matplotlib refuses negative whiskers
    err = np.maximum(np.array([[v.mean - v.ci_low for v in values], [v.ci_high - v.mean for v in values]]), 0.0) * scale
    ax.bar(x, means, 0.6, yerr=err, capsize=4, color="tab:blue")
    ax.set_xticks(x, [f"{task_label(task)}\nn={summary.n}" for task, summary in tasks])
    ax.set_ylabel(metric + (" (%)" if scale == 100 else ""))
    if scale == 100:
        ax.set_ylim(0, 100)
    ax.set_title(title or f"{metric} per task, 95% intervals", fontsize="medium")
    return fig


def plot_run_metrics(metrics, path: str | Path, metric: str = "em", title: str = "") -> Path | None:
    """`run_metrics_figure` saved to `path` (PNG or SVG); None when there is nothing to draw."""
    fig = run_metrics_figure(metrics, metric, title)
    return None if fig is None else _save(fig, path)


def plot_top_entries(series: dict[str, dict[str, object]], tasks: Sequence[str], metric: str, path: str | Path,
                     title: str = "") -> Path | None:
    """Grouped bars of several systems' stored summaries (`series`: label → task → an object with mean, ci_low and
    ci_high, e.g. a metrics.json summary): one group per task, whiskers at each 95% interval. None when empty."""
    if not series or not tasks:
        return None
    scale = _scale(metric)
    width = 0.8 / len(series)
    fig = _figure(max(5.0, 0.55 * len(tasks) * len(series) + 2), 3.6 + 0.25 * len(series))
    ax = fig.add_subplot()
    x = np.arange(len(tasks))
    for i, (label, by_task) in enumerate(series.items()):
        values = [by_task.get(t) for t in tasks]
        means = np.array([v.mean * scale if v is not None else np.nan for v in values])
        low = np.array([max(v.mean - v.ci_low, 0.0) * scale if v is not None else 0.0 for v in values])
        high = np.array([max(v.ci_high - v.mean, 0.0) * scale if v is not None else 0.0 for v in values])
        # `$` starts matplotlib's math text: a submitted name is drawn as typed
        ax.bar(x + (i - (len(series) - 1) / 2) * width, means, width, yerr=np.vstack([low, high]), capsize=3,
               label=label.replace("$", r"\$"))
    ax.set_xticks(x, [task_label(t) for t in tasks])
    ax.set_ylabel(metric + (" (%)" if scale == 100 else ""))
    ax.set_title(title or f"{metric} per benchmark, 95% intervals", fontsize="medium")
    fig.legend(loc="outside lower center", fontsize="small", ncols=1)
    return _save(fig, path)
