"""A run directory's plot, metrics.png: the headline metric per task with its 95% interval, drawn when the run
directory is finished (`RunDirectory.finish`); and the figure helpers the comparison plots (evalsuite.tables.plots)
share. matplotlib is the [site] extra: without it no plot is drawn."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evalsuite.errors import EvalsuiteError, require
from evalsuite.metrics.registry import get_metric, is_registered
from evalsuite.tasks.registry import task_label

PLOT_FORMATS = (".png", ".svg")


def figure(width: float, height: float):
    """An empty matplotlib figure; a missing matplotlib is one line naming the [site] extra."""
    require("matplotlib", "site", "plotting tables")
    # The object-oriented Figure needs no pyplot state or display backend.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save_figure(fig, path: str | Path) -> Path:
    """`fig` written to `path` (PNG or SVG, by its suffix); an unwritable path is one line."""
    path = Path(path)
    if path.suffix.lower() not in PLOT_FORMATS:
        raise EvalsuiteError(
            f"cannot write a plot to {path}: unknown format {path.suffix or '(none)'}",
            hint=f"name the file with one of {', '.join(PLOT_FORMATS)}",
        )
    import matplotlib

    # No date and a fixed id salt keep SVG output byte-stable across runs.
    metadata = {"Date": None} if path.suffix.lower() == ".svg" else {}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with matplotlib.rc_context({"svg.hashsalt": "evalsuite"}):
            fig.savefig(path, dpi=150, metadata=metadata)
    except OSError as exc:
        raise EvalsuiteError(
            f"cannot write a plot to {path}: {exc.strerror or exc}", hint="choose a writable file path"
        ) from None
    return path


def percent_scale(metric: str) -> float:
    """×100 for a metric its declaration prints as a percent (evalsuite.metrics.registry), else as it is."""
    return 100.0 if is_registered(metric) and get_metric(metric).percent else 1.0


def run_metrics_figure(metrics, metric: str = "em", title: str = ""):
    """One run's `metric` per task as bars with the 95% interval metrics.json stores (Wilson or bootstrap), the
    n of each task under its bar; None when no task has the metric (nothing to draw)."""
    tasks = [(task, summary) for task, summary in metrics.tasks.items() if metric in summary.metrics]
    if not tasks:
        return None
    scale = percent_scale(metric)
    fig = figure(max(4.0, 0.9 * len(tasks) + 2), 3.4)
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
    return None if fig is None else save_figure(fig, path)


def write_run_plot(metrics, path: Path, title: str) -> Path | None:
    """The run's headline metric per task with its interval at `path` (metrics.png); None, and no file left at
    `path`, where matplotlib is not installed (the [site] extra) or nothing was scored."""
    import importlib.util

    from evalsuite.metrics.registry import summary_metrics

    drawn = None
    if importlib.util.find_spec("matplotlib") is not None:
        headline = summary_metrics()[0]
        drawn = plot_run_metrics(metrics, path, headline.name, f"{title}: {headline.label} per task, 95% intervals")
    if drawn is None:
        path.unlink(missing_ok=True)  # an earlier finish's plot (a resumed run) would no longer be this run's
    return drawn
