"""The numbers the site shows: verified rows per setting with CIs and significance groups, and reported rows.

Verified rows come only from re-verified entries (scores recomputed against the registry's gold answers);
reported rows come only from the transcribed paper tables; the two are kept in separate tables, never ranked
together. Significance groups, per benchmark: `a` = the top entry and every entry not significantly below it
(paired test on the same examples, Holm-corrected across an entry's benchmarks), `b` = significantly below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.verify import VerificationReport
from evalsuite.metrics.registry import list_metrics
from evalsuite.reported import ReportedTable, default_root, list_reported, load_reported
from evalsuite.stats import SystemScores, compare, holm
from evalsuite.stats.intervals import interval_method as declared_interval
from evalsuite.stats.intervals import method_name
from evalsuite.tasks.registry import get_task, task_names

SIGNIFICANCE_RESAMPLES = 2000
ALPHA = 0.05


@dataclass
class Entry:
    """A filed, re-verified entry."""

    id: str
    path: Path
    report: VerificationReport

    @property
    def name(self) -> str:
        assert self.report.info is not None
        return self.report.info.name

    def scores(self, task: str, metric: str) -> dict[str, float]:
        """Recomputed per-example scores of one task, by example id."""
        return {r.id: r.metrics[metric] for r in self.report.tasks[task].records}

    def has(self, task: str, metric: str) -> bool:
        """Whether the entry covers `task` and its task is scored with `metric`."""
        verified = self.report.tasks.get(task)
        return verified is not None and metric in verified.summary.metrics

    def covers(self, column: TaskSplit, metric: str) -> bool:
        """Whether the entry covers this task *on this split*, scored with `metric`."""
        return self.has(column.task, metric) and self.report.tasks[column.task].split == column.split


def leaderboard_metrics() -> dict[str, str]:
    """name → label of the metrics with a leaderboard table: registered ones in [0, 1] that macro-average over
    benchmarks (the table's Avg column), in registration order. A metric registered later gets its table at
    the next build, computed from every entry's verified predictions."""
    return {m.name: m.label for m in list_metrics() if m.average == "macro" and m.percent}


def task_columns(entries: Sequence[Entry] = ()) -> tuple[str, ...]:
    """The registered tasks in registration order (the shipped ones in the papers' column order), then any other
    task the entries cover, sorted."""
    registered = task_names()
    extra = sorted({t for e in entries for t in e.report.tasks} - set(registered))
    return registered + tuple(extra)


@dataclass(frozen=True)
class TaskSplit:
    """One ranking column: a task on one split. Entries on another split of the task (a training or dev split, a
    subsample) get a column of their own and are never ranked against this one."""

    task: str
    split: str

    @property
    def key(self) -> str:
        """The task's name for its eval split (as reported tables key it), `task:split` for any other split."""
        try:
            evaluated = get_task(self.task).eval_split == self.split
        except EvalsuiteError:
            evaluated = False
        return self.task if evaluated else f"{self.task}:{self.split}"


def split_columns(entries: Sequence[Entry]) -> list[TaskSplit]:
    """The (task, split) pairs the entries cover, in `task_columns` order, each task's eval split first."""
    pairs = {TaskSplit(t, v.split) for e in entries for t, v in e.report.tasks.items()}
    order = {task: i for i, task in enumerate(task_columns(entries))}

    def eval_first(column: TaskSplit) -> tuple[int, int, str]:
        try:
            evaluated = get_task(column.task).eval_split == column.split
        except EvalsuiteError:
            evaluated = False
        return order[column.task], 0 if evaluated else 1, column.split

    return sorted(pairs, key=eval_first)


@dataclass
class Cell:
    """One table cell: the sort value (percent), its text, CI and significance mark."""

    value: float | None = None
    text: str = "–"
    ci: str = ""
    title: str = ""
    group: str = ""  # "a" / "b" / "" (not tested)
    css: str = ""
    coverage: str = ""  # Avg cells: "3 of 7 tasks", always shown


@dataclass
class Row:
    name: str
    badge: str  # "verified" | "reported"
    cells: list[Cell]
    average: Cell
    href: str | None = None
    method: str = ""
    model: str = ""
    citation: str = ""
    citation_title: str = ""
    note: str = ""  # verified rows: "paper setting" or how the entry differs from its method's paper setting
    proof: str = ""  # verified rows: what the badge proves and what is only declared (VerificationReport.proof_line)


@dataclass
class Column:
    key: str
    label: str
    title: str


@dataclass
class MetricTable:
    metric: str
    label: str
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)


def task_label(task: str) -> str:
    try:
        return get_task(task).display_name
    except EvalsuiteError:
        return task


def columns(tasks: Sequence[str] | None = None) -> list[Column]:
    """The benchmark columns (default: every registered task), with the in-domain/out-of-domain note for the NQ+HotpotQA training mix."""
    cols = []
    for task in task_names() if tasks is None else tasks:
        try:
            spec = get_task(task)
            title = f"{spec.display_name}: {spec.category}, eval split {spec.eval_split}"
        except EvalsuiteError:
            title = task
        cols.append(Column(task, task_label(task), title))
    return cols


def split_column_header(column: TaskSplit) -> Column:
    """A column's header: the task's name, with the split named whenever it is not the task's eval split."""
    try:
        spec = get_task(column.task)
        evaluated = spec.eval_split == column.split
        title = f"{spec.display_name}: {spec.category}, {column.split} split"
    except EvalsuiteError:
        evaluated, title = False, f"{column.task}, {column.split} split"
    label = task_label(column.task) if evaluated else f"{task_label(column.task)} ({column.split})"
    return Column(column.key, label, title + ("" if evaluated else "; ranked only against entries on the same split"))


def _pct(value: float) -> float:
    return round(100.0 * value, 6)


def interval_method(metric: str) -> str:
    """How metrics.json computed an entry's interval: the method the metric declares (evalsuite.stats.intervals)."""
    return method_name(declared_interval(metric))


def _significance(entries: Sequence[Entry], column: TaskSplit, metric: str) -> tuple[str | None, dict[str, float]]:
    """The top entry of a (task, split) column and each other entry's raw p-value against it."""
    task = column.task
    paired = [e for e in entries if e.covers(column, metric)]
    if not paired:
        return None, {}
    top = max(paired, key=lambda e: (e.report.tasks[task].summary.metrics[metric].mean, e.id))
    if len(paired) < 2:
        return top.id, {}
    systems = [SystemScores(e.id, {task: e.scores(task, metric)}) for e in paired]
    result = compare(systems, baseline=top.id, metric=metric, n_resamples=SIGNIFICANCE_RESAMPLES,
                     n_permutations=SIGNIFICANCE_RESAMPLES)
    return top.id, {e.id: result.differences[(e.id, task)].p_value for e in paired if e.id != top.id}


def verified_table(entries: Sequence[Entry], metric: str, entry_href: str = "entries/{id}/index.html") -> MetricTable:
    """One setting's verified rows for one metric: per-(task, split) means with 95% CIs and significance groups.

    Each column is one task on one split, so a training or dev split is never ranked with a test split. The Avg
    is given only to entries covering every column of the table (an average over the same tasks as every other
    Avg it is sorted with); each row shows its coverage."""
    label = leaderboard_metrics()[metric]
    splits = split_columns(entries)
    table = MetricTable(metric, label, [split_column_header(c) for c in splits])
    tops: dict[TaskSplit, str | None] = {}
    raw: dict[TaskSplit, dict[str, float]] = {}
    for column in splits:
        tops[column], raw[column] = _significance(entries, column, metric)
    # Holm across the benchmarks on which each entry was tested against a top entry.
    adjusted: dict[tuple[str, TaskSplit], float] = {}
    for entry in entries:
        keys = [c for c in splits if entry.id in raw[c]]
        for column, p in zip(keys, holm([raw[c][entry.id] for c in keys])):
            adjusted[(entry.id, column)] = float(p)
    for entry in entries:
        info = entry.report.info
        assert info is not None
        cells = []
        for column in splits:
            if not entry.covers(column, metric):
                cells.append(Cell())
                continue
            task = column.task
            verified = entry.report.tasks[task]
            s = verified.summary.metrics[metric]
            cell = Cell(value=_pct(s.mean), text=f"{100 * s.mean:.1f}", ci=f"[{100 * s.ci_low:.1f}, {100 * s.ci_high:.1f}]")
            failed = f" ({verified.summary.n_failed} failed, scored 0)" if verified.summary.n_failed else ""
            title = f"{task_label(task)} {verified.split}, n={verified.summary.n}{failed}: {label} {100 * s.mean:.2f}, 95% CI {cell.ci} ({interval_method(metric)})"
            if tops[column] == entry.id:
                cell.group, cell.css = "a", "top"
                title += "; top entry of this column"
            elif (entry.id, column) in adjusted:
                p = adjusted[(entry.id, column)]
                cell.group = "b" if p <= ALPHA else "a"
                cell.css = "sig-below" if cell.group == "b" else ""
                title += f"; vs top: Holm-adjusted p = {p:.3g} ({'significantly below' if cell.group == 'b' else 'not significantly different'})"
            else:
                title += "; not tested against the top (no other entry on this split)"
            cell.title = title
            cells.append(cell)
        paper = entry.report.paper_setting
        table.rows.append(Row(name=info.name, badge="verified", cells=cells, average=_average(entry, metric, splits),
                              href=entry_href.format(id=entry.id), method=info.method, model=info.model.name,
                              note=paper.summary() if paper else "", proof=entry.report.proof_line()))
    table.rows.sort(key=lambda r: -(r.average.value if r.average.value is not None else -1))
    return table


def _average(entry: Entry, metric: str, columns: Sequence[TaskSplit]) -> Cell:
    """The mean over every column of the table, or no value when the entry misses one: averages over different
    task sets are not comparable, so only full-coverage rows get one. Coverage is shown either way."""
    covered = [c for c in columns if entry.covers(c, metric)]
    coverage = f"{len(covered)} of {len(columns)} tasks"
    if not covered:
        return Cell(coverage=coverage)
    if len(covered) < len(columns):
        return Cell(coverage=coverage, title=f"no average: this entry covers {len(covered)} of the table's {len(columns)} "
                                             "task splits, and averages are only compared over the same tasks")
    mean = float(np.mean([entry.report.tasks[c.task].summary.metrics[metric].mean for c in covered]))
    names = ", ".join(f"{task_label(c.task)} {c.split}" for c in covered)
    return Cell(value=_pct(mean), text=f"{100 * mean:.1f}", coverage=coverage,
                title=f"unweighted mean over all {len(covered)} task splits of this table ({names})")


def _reported_cell(table: ReportedTable, row: str, key: str | None) -> Cell:
    if key is None:
        return Cell()
    value = table.cells[(row, key)]
    if value.value is None:
        return Cell()
    if table.scale == "fraction":
        digits = max(value.decimals - 2, 1)
        text, pct = f"{100 * value.value:.{digits}f}", _pct(value.value)
    else:
        text, pct = value.printed, round(value.value, 6)
    return Cell(value=pct, text=text + value.marks, title=f"as printed in {table.paper} Table {table.table}: {value.printed}{value.marks}")


def reported_tables(root: Path | None = None) -> dict[str, MetricTable]:
    """Rows of every transcribed paper table that reports a leaderboard metric per benchmark, one table per metric."""
    root = root or default_root()
    metrics = leaderboard_metrics()
    registered = task_names()
    tables = {m: MetricTable(m, label, columns(registered)) for m, label in metrics.items()}
    for key in list_reported(root):
        table = load_reported(key, root)
        if table.scale == "raw":
            continue
        for metric in metrics:
            by_task = {c.dataset: k for k, c in table.columns.items() if c.metric == metric and c.dataset in registered and not c.average_of}
            if not by_task:
                continue
            avg_key = next((k for k, c in table.columns.items() if c.metric == metric and c.average_of and c.dataset is None
                            and k in ("avg", f"avg.{metric}")), None)
            for label, row in table.rows.items():
                cells = [_reported_cell(table, label, by_task.get(task)) for task in registered]
                if all(c.value is None for c in cells):
                    continue
                average = _reported_cell(table, label, avg_key)
                if average.value is not None:
                    average.ci = "as printed"
                    average.title = "the paper's own average over its benchmarks, as printed"
                model = row.model or ""
                tables[metric].rows.append(Row(
                    name=f"{row.method}" + (f" [{row.train_set}]" if row.train_set else ""), badge="reported", cells=cells,
                    average=average, method=row.method, model=model,
                    citation=table.citation,
                    citation_title=f"{table.caption} (transcribed from {table.citation})",
                ))
    return tables

