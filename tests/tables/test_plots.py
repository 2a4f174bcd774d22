"""Plots from the real Bamboogle runs: bars with interval whiskers and a forest plot of differences."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.tables import build_run_table, get_layout, load_runs
from evalsuite.tables.plots import plot_forest
from tests.conftest import requires_extra

pytestmark = requires_extra("site", "matplotlib")  # every plot is drawn with matplotlib

BASE = "bamboogle_2026_04_24_16_17_search_r1_base"


def test_cli_writes_png_bars_and_svg_forest(bamboogle_runs, cli, tmp_path):
    bars, forest = tmp_path / "bars.png", tmp_path / "forest.svg"
    cli("table", *map(str, bamboogle_runs.values()), "--baseline", BASE, "--format", "csv",
        "--plot-bars", str(bars), "--plot-forest", str(forest), "--resamples", "500")
    assert bars.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    root = ET.fromstring(forest.read_text())
    assert root.tag.endswith("svg")
    text = forest.read_text()
    # one row per non-baseline run, labelled with the run and benchmark
    for stem in bamboogle_runs:
        assert (f"{stem} · Bamboogle" in text) == (stem != BASE)


def test_svg_is_byte_stable(bamboogle_runs, tmp_path):
    runs = load_runs(list(bamboogle_runs.values()))
    comparison = build_run_table(runs, get_layout("compact"), "em", BASE, n_resamples=300).comparisons["em"]
    first, second = plot_forest(comparison, tmp_path / "a.svg"), plot_forest(comparison, tmp_path / "b.svg")
    assert first.read_bytes() == second.read_bytes()


def test_unknown_plot_format_is_an_error(bamboogle_runs, tmp_path):
    runs = load_runs(list(bamboogle_runs.values())[:2])
    comparison = build_run_table(runs, get_layout("compact"), "em", BASE, n_resamples=200).comparisons["em"]
    with pytest.raises(EvalsuiteError, match=r"unknown format \.pdf"):
        plot_forest(comparison, tmp_path / "forest.pdf")


def test_a_runs_plot_draws_each_tasks_mean_and_its_stored_interval(tmp_path):
    from evalsuite.runs.schema import MetricsFile, MetricSummary, TaskSummary
    from evalsuite.runs.plot import plot_run_metrics, run_metrics_figure

    metrics = MetricsFile(tasks={
        "nq": TaskSummary(n=20, metrics={"em": MetricSummary(mean=0.25, ci_low=0.1, ci_high=0.45)}),
        "bamboogle": TaskSummary(n=10, n_failed=1, metrics={"em": MetricSummary(mean=0.5, ci_low=0.2, ci_high=0.8)}),
        "adqa": TaskSummary(n=5, metrics={"f1": MetricSummary(mean=0.3, ci_low=0.1, ci_high=0.5)}),  # no EM: no bar
    })
    ax = run_metrics_figure(metrics, "em").axes[0]
    assert [bar.get_height() for bar in ax.patches] == [25.0, 50.0]
    (errorbars,) = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    whiskers = errorbars.lines[2][0].get_segments()  # (x, low) to (x, high) per bar
    assert [(round(s[0][1], 6), round(s[1][1], 6)) for s in whiskers] == [(10.0, 45.0), (20.0, 80.0)]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["NQ\nn=20", "Bamboogle\nn=10"]
    assert plot_run_metrics(metrics, tmp_path / "m.png").stat().st_size > 1000
    assert plot_run_metrics(metrics, tmp_path / "none.png", metric="retrieval_hit") is None
