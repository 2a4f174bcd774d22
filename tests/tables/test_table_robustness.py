"""`evalsuite table` never crashes: any run order, baseline, layout, metric, test and format gives a table or one
clear error. Each run's own mean and interval are the same whatever the baseline, and equal its metrics.json."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsuite.errors import EvalsuiteError
from evalsuite.tables.layouts import LAYOUTS
from evalsuite.tables.render import RENDERERS

TASK_SIZES = {"nq": 9, "hotpotqa": 7, "bamboogle": 5, "musique": 6, "my_task": 4}
METHODS = ("search-r1", "progress", None)


@st.composite
def run_sets(draw):
    """2–4 runs over overlapping benchmark sets, with 0/1 EM, discrete F1 and the odd failed example."""
    n_runs = draw(st.integers(2, 4))
    runs = []
    for r in range(n_runs):
        tasks = draw(st.lists(st.sampled_from(sorted(TASK_SIZES)), min_size=1, max_size=4, unique=True))
        per_task = {}
        for task in tasks:
            rows = []
            for _ in range(TASK_SIZES[task]):
                if draw(st.integers(0, 12)) == 0:
                    rows.append(None)
                else:
                    em = float(draw(st.booleans()))
                    rows.append({"em": em, "cover_em": em, "f1": draw(st.sampled_from([0.0, 0.5, 2 / 3, 1.0])) if not em else 1.0})
            per_task[task] = rows
        runs.append((f"run{r}", per_task, draw(st.sampled_from(METHODS)), draw(st.booleans())))
    return runs


def _table(cli, dirs: list[Path], *options: str):
    return cli("table", *map(str, dirs), "--resamples", "200", "--permutations", "200", *options)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(runs=run_sets(), data=st.data())
def test_any_runs_baseline_layout_metric_test_and_format_give_a_table_or_one_clear_error(cli, write_run, runs, data):
    with tempfile.TemporaryDirectory() as tmp:
        dirs = [write_run(Path(tmp) / name, tasks, method, columns) for name, tasks, method, columns in runs]
        order = data.draw(st.permutations(dirs))
        baseline = data.draw(st.sampled_from([None] + [d.name for d in dirs] + [m for _, _, m, _ in runs if m]))
        metric = data.draw(st.sampled_from(["em", "f1", "cover_em", "precision"]))
        options = ["--layout", data.draw(st.sampled_from(sorted(LAYOUTS))), "--metric", metric,
                   "--test", data.draw(st.sampled_from(["auto", "mcnemar", "randomization", "bootstrap"])),
                   "--format", data.draw(st.sampled_from(sorted(RENDERERS))), "--stats-json", str(Path(tmp) / "stats.json")]
        options += ["--ci"] if data.draw(st.booleans()) else []
        if data.draw(st.integers(0, 4)) == 0:
            options += ["--plot-bars", str(Path(tmp) / "bars.svg"), "--plot-forest", str(Path(tmp) / "forest.svg")]
        options += ["--baseline", baseline] if baseline else []
        try:
            result = _table(cli, order, *options)
        except EvalsuiteError as exc:
            assert "\n" not in exc.message and exc.message.strip()
            return
        assert result.exit_code == 0, result.output
        stats = json.loads((Path(tmp) / "stats.json").read_text())
        for comparison in stats.values():
            for key, estimate in comparison["means"].items():
                name, task = key.split("/")
                own = json.loads((Path(tmp) / name / "metrics.json").read_text())["tasks"][task]["metrics"].get(comparison["metric"])
                if own is None:  # every example failed: the table counts them 0, metrics.json has no such metric
                    assert estimate["mean"] == 0.0
                    continue
                assert (estimate["mean"], estimate["ci_low"], estimate["ci_high"]) == pytest.approx(
                    (own["mean"], own["ci_low"], own["ci_high"]), abs=1e-12), key


def _full(rng: np.random.Generator, tasks: tuple[str, ...], p: float) -> dict[str, list[dict[str, float]]]:
    return {t: [{"em": float(v), "f1": float(v)} for v in rng.random(TASK_SIZES[t] * 4) < p] for t in tasks}


def test_every_run_can_be_the_baseline(cli, write_run, tmp_path):
    """The reported crash: a baseline that is not the first run, with an average column. Every run, by name."""
    rng = np.random.default_rng(0)
    tasks = ("nq", "hotpotqa", "bamboogle")
    dirs = [write_run(tmp_path / f"r{i}", _full(rng, tasks, p), method=m)
            for i, (p, m) in enumerate([(0.3, "search-r1"), (0.5, "progress"), (0.7, None), (0.4, None)])]
    dirs.append(write_run(tmp_path / "partial", _full(rng, ("nq", "hotpotqa"), 0.6)))  # no Bamboogle, hence no average
    for baseline in [d.name for d in dirs] + ["search-r1", "progress"]:
        for fmt in ("csv", "markdown"):
            result = _table(cli, dirs, "--baseline", baseline, "--format", fmt)
            assert result.exit_code == 0, result.output
        expected = {"search-r1": "r0", "progress": "r1"}.get(baseline, baseline)
        main, differences = result.output.split(f"**Paired differences from {expected} (em).**")
        rows = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in main.splitlines() if line.startswith("| r")}
        assert set(rows) == {"r0", "r1", "r2", "r3"}  # the partial run's row is "| partial"
        assert all(average.rstrip("▲▼") not in ("", "–") for average in rows.values())  # every full run has its Avg.
        average_rows = differences.split("**Average (NQ, HotpotQA, Bamboogle)**")[1].split("- Δ")[0]
        assert sum(f"| r{i} " in average_rows for i in range(4)) == 4
        if expected != "partial":  # every other full run gets its average's paired difference
            assert average_rows.count("stratified bootstrap") == 3
