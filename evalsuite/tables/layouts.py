"""Table layouts for run directories: the papers' layouts (Progress Table 1, OASES Table 1) and a compact one.

A layout only decides which columns exist (benchmarks, metrics, averages) and how they are grouped; the values,
intervals and significance marks come from evalsuite.stats.compare on the runs' per-example scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import Registry
from evalsuite.metrics.registry import get_metric, is_registered
from evalsuite.stats import Comparison, Difference, Estimate, compare
from evalsuite.stats.compare import CorrectionFamily, TestChoice
from evalsuite.tables.model import Cell, Column, ColumnGroup, Row, RowGroup, Table, mark_best
from evalsuite.tables.sources import RunData, settings_notes
from evalsuite.tasks.registry import list_tasks, task_label

BETTER, WORSE = "▲", "▼"


@dataclass(frozen=True)
class LayoutColumn:
    """A column: one benchmark's score, or the macro-average of several (`average`)."""

    key: str
    label: str
    tasks: tuple[str, ...]
    metric: str | None = None  # None: the table's --metric
    average: bool = False


ColumnPlan = list[tuple[str, list[LayoutColumn]]]


@dataclass(frozen=True)
class Layout:
    """A named layout: builds its column groups from the tasks the runs hold."""

    name: str
    description: str
    plan: Callable[[list[str]], ColumnPlan]
    domain_marks: bool = False


def _compact_plan(tasks: list[str]) -> ColumnPlan:
    registered = [t.name for t in list_tasks()]
    ordered = [t for t in registered if t in tasks] + [t for t in tasks if t not in registered]
    columns = [LayoutColumn(t, task_label(t), (t,)) for t in ordered]
    if len(ordered) > 1:
        columns.append(LayoutColumn("avg", "Avg.", tuple(ordered), average=True))
    return [("", columns)]


def _check_layout(name: str, value: Any) -> Layout:
    if not isinstance(value, Layout) or value.name != name:
        raise EvalsuiteError(f"layout {name!r} is {value!r}, not a tables.layouts.Layout named {name!r}")
    return value


# Layouts by name: the generic one here, a paper's own from its method package (`PARTS["layout"]`, e.g. OASES's
# Table 1 in evalsuite/methods/oases/paper.py), then the plugins'.
LAYOUTS: Registry[Layout] = Registry("layout", check=_check_layout, packaged="layout")
LAYOUTS.register(
    "compact", Layout("compact", "the runs' own benchmarks, in registry order, and their average", _compact_plan)
)


def get_layout(name: str) -> Layout:
    """A layout by name; unknown names get a did-you-mean."""
    return LAYOUTS.get(name)


def is_percent(metric: str) -> bool:
    """Whether a metric is printed ×100, as its declaration says (evalsuite.metrics.registry); unregistered: no."""
    return is_registered(metric) and bool(get_metric(metric).percent)


def higher_is_better(metric: str) -> bool:
    return get_metric(metric).higher_is_better if is_registered(metric) else True


def format_value(value: float, metric: str) -> str:
    """Percent metrics ×100 with two decimals (the papers' style); counts as they are."""
    return f"{value * 100:.2f}" if is_percent(metric) else f"{value:.2f}"


def _scaled(value: float, metric: str) -> float:
    return value * 100 if is_percent(metric) else value


def _value_cell(
    estimate: Estimate | None, diff: Difference | None, metric: str, with_ci: bool, sd: float | None = None
) -> Cell:
    if estimate is None:
        return Cell("–")
    marks = ""
    if diff is not None and diff.significant:
        marks = BETTER if diff.difference > 0 else WORSE
    # The bounds, never "± half-width": Wilson's and the bootstrap's intervals are asymmetric near 0 and 1.
    # "± sd" is how much one seed's mean moves in a multi-seed run, a description of the seeds, not an interval.
    detail = " ".join(
        part
        for part in (
            f"± {format_value(sd, metric)}" if sd is not None else "",
            f"[{format_value(estimate.ci_low, metric)}, {format_value(estimate.ci_high, metric)}]" if with_ci else "",
        )
        if part
    )
    return Cell(format_value(estimate.mean, metric), _scaled(estimate.mean, metric), marks, detail=detail)


@dataclass
class RunTable:
    """A layout filled from runs, with the comparisons behind it (one per metric)."""

    table: Table
    comparisons: dict[str, Comparison]


def build_run_table(
    runs: Sequence[RunData],
    layout: Layout,
    metric: str,
    baseline: str,
    *,
    with_ci: bool = False,
    test: TestChoice = "auto",
    n_resamples: int = 10_000,
    n_permutations: int = 10_000,
    seed: int = 12345,
    correction: CorrectionFamily = "benchmarks",
    mid_p: bool = False,
) -> RunTable:
    """Fill a layout from run directories: means, ▲/▼ against
    the baseline after Holm, optional [low, high] intervals."""
    run_tasks = list(dict.fromkeys(t for r in runs for t in r.tasks))
    plan = layout.plan(run_tasks)
    metrics = list(dict.fromkeys(c.metric or metric for _, cols in plan for c in cols))
    comparisons = {}
    for m in metrics:
        groups = {c.key: list(c.tasks) for _, cols in plan for c in cols if c.average and (c.metric or metric) == m}
        comparisons[m] = compare(
            [r.scores(m) for r in runs],
            baseline,
            metric=m,
            groups=groups,
            test=test,
            n_resamples=n_resamples,
            n_permutations=n_permutations,
            seed=seed,
            correction=correction,
            mid_p=mid_p,
        )
    marks, notes = settings_notes(runs, baseline, metrics)
    rows = []
    for run in runs:
        cells = {}
        for _, cols in plan:
            for c in cols:
                comp = comparisons[c.metric or metric]
                sd = run.seed_sd(comp.metric, c.tasks)
                if c.average:
                    cells[c.key] = _value_cell(
                        comp.averages.get((run.name, c.key)),
                        comp.average_differences.get((run.name, c.key)),
                        comp.metric,
                        with_ci,
                        sd,
                    )
                else:
                    task = c.tasks[0]
                    cells[c.key] = _value_cell(
                        comp.means.get((run.name, task)),
                        comp.differences.get((run.name, task)),
                        comp.metric,
                        with_ci,
                        sd,
                    )
        rows.append(Row([run.name], cells, marks.get(run.name, "")))
    # Best/second only for scores, not for counts such as n_searches; in the direction the metric declares.
    column_groups = [
        ColumnGroup(
            title,
            [
                Column(
                    c.key,
                    c.label,
                    highlight=is_percent(c.metric or metric),
                    higher_is_better=higher_is_better(c.metric or metric),
                )
                for c in cols
            ],
        )
        for title, cols in plan
    ]
    table = Table(
        title=f"{layout.name} ({', '.join(metrics)})",
        lead_headers=["Method"],
        column_groups=column_groups,
        row_groups=[RowGroup("", rows)],
    )
    mark_best(table)
    table.footnotes = (
        _footnotes(comparisons, layout, baseline, with_ci, plan, run_tasks) + _seed_notes(runs, metrics) + notes
    )
    return RunTable(table, comparisons)


def _footnotes(
    comparisons: dict[str, Comparison],
    layout: Layout,
    baseline: str,
    with_ci: bool,
    plan: ColumnPlan,
    run_tasks: list[str],
) -> list[str]:
    comp = next(iter(comparisons.values()))
    tests = sorted({d.test for c in comparisons.values() for d in c.differences.values()})
    percent = [m for m in comparisons if is_percent(m)]
    scale = f"Scores ×100 for {', '.join(percent)}; bold: best, underline: second best per column. " if percent else ""
    permutations = (
        f", {comp.n_permutations} permutations" if any(t.startswith("approximate-randomization") for t in tests) else ""
    )
    notes = [
        scale + "Averages are macro-averages over the benchmarks named.",
        f"{BETTER}/{WORSE}: significantly higher/lower than the baseline {baseline} (p ≤ {comp.alpha} after "
        f"Holm–Bonferroni {_family_text(comp)}; {', '.join(tests) or 'no paired benchmark'}{permutations}); averages: "
        f"dataset-stratified paired bootstrap, {comp.n_resamples} resamples, uncorrected. Seed {comp.seed}.",
    ]
    if with_ci:
        methods = "; ".join(dict.fromkeys(m for c in comparisons.values() for m in c.interval_methods))
        notes.append(
            f"[low, high]: each run's own {comp.confidence:.0%} interval of the mean, as in its "
            f"metrics.json: {methods}. Averages: dataset-stratified bootstrap, {comp.n_resamples} resamples."
        )
    if layout.domain_marks:
        notes.append(
            "†/⋆: in-domain/out-of-domain benchmarks for the NQ + HotpotQA training mix (Search-R1's setting)."
        )
    shown = {t for _, cols in plan for c in cols for t in c.tasks}
    hidden = [t for t in run_tasks if t not in shown]
    if hidden:
        notes.append(f"Not in this layout: {', '.join(hidden)} (see --layout compact).")
    for c in comparisons.values():
        notes.extend(c.notes)
    return notes


def _seed_notes(runs: Sequence[RunData], metrics: list[str]) -> list[str]:
    """What "± sd" means, when a multi-seed (sampled) run shows it."""
    seeded = [f"{r.name} (K = {r.columns.samples})" for r in runs if r.columns.samples > 1]
    if not seeded or not any(m.endswith("_avg") for m in metrics):
        return []
    return [
        f"± sd: standard deviation of one seed's mean (of each benchmark, or of the average) in a multi-seed run, "
        f"estimated from each question's samples whatever their labels, {', '.join(seeded)}. Means, intervals and "
        f"tests take each question as one cluster: its "
        f"avg@K over the seeds, never K independent questions."
    ]


def _family_text(comparison: Comparison) -> str:
    """The family Holm's correction ran over, in words."""
    return {
        "holm across systems, per benchmark": "across the runs on each benchmark",
        "holm across all systems and benchmarks": "across every run and benchmark",
    }.get(comparison.correction, "across the benchmarks of each run")


_TEST_NAMES = {
    "mcnemar-exact": "McNemar (exact)",
    "approximate-randomization": "randomization",
    "paired-bootstrap": "bootstrap",
    "stratified-bootstrap": "stratified bootstrap",
    "mcnemar-mid-p": "McNemar (mid-p)",
    "approximate-randomization-mid-p": "randomization (mid-p)",
}


def format_p(p: float | None) -> str:
    """p-values with three decimals, or in scientific notation below 0.001."""
    if p is None:
        return "–"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def differences_table(comparison: Comparison, order: Sequence[str]) -> Table:
    """One row per benchmark and system: mean, difference from the baseline with its interval, test and p-values."""
    m = comparison.metric
    columns = [
        Column("n", "n", False),
        Column("mean", m, False),
        Column("diff", "Δ", False),
        Column("ci", f"{comparison.confidence:.0%} CI of Δ", False),
        Column("test", "test", False),
        Column("p", "p", False),
        Column("p_holm", "p (Holm)", False),
    ]
    groups = []
    targets = [(t, task_label(t), comparison.means, comparison.differences) for t in comparison.tasks]
    targets += [
        (g, f"Average ({', '.join(task_label(t) for t in ts)})", comparison.averages, comparison.average_differences)
        for g, ts in comparison.groups.items()
        if any((s, g) in comparison.averages for s in order)
    ]
    for key, title, means, diffs in targets:
        rows = []
        for system in order:
            est = means.get((system, key))
            if est is None:
                continue
            d = diffs.get((system, key))
            cells = {"n": Cell(str(est.n), float(est.n)), "mean": Cell(format_value(est.mean, m), _scaled(est.mean, m))}
            if d is not None:
                sign = "+" if d.difference >= 0 else ""
                cells |= {
                    "diff": Cell(
                        f"{sign}{format_value(d.difference, m)}",
                        _scaled(d.difference, m),
                        BETTER if d.significant and d.difference > 0 else WORSE if d.significant else "",
                    ),
                    "ci": Cell(f"[{format_value(d.ci_low, m)}, {format_value(d.ci_high, m)}]"),
                    "test": Cell(_TEST_NAMES.get(d.test, d.test)),
                    "p": Cell(format_p(d.p_value), d.p_value),
                    "p_holm": Cell(format_p(d.p_holm), d.p_holm),
                }
            label = system + (" (baseline)" if system == comparison.baseline else "")
            rows.append(Row([label], cells))
        if rows:
            groups.append(RowGroup(title, rows))
    return Table(
        title=f"Paired differences from {comparison.baseline} ({m})",
        lead_headers=["System"],
        column_groups=[ColumnGroup("", columns)],
        row_groups=groups,
        footnotes=[
            "Δ and its interval: paired bootstrap over the same resampled examples "
            f"({comparison.n_resamples} resamples, seed {comparison.seed}); p: the paired test "
            f"named; p (Holm): Holm–Bonferroni {_family_text(comparison)}; {BETTER}/{WORSE}: p "
            f"(Holm) ≤ {comparison.alpha} (averages: stratified bootstrap p, uncorrected)."
        ],
    )
