"""The numbers the site shows: verified rows per setting with CIs and significance groups, and reported rows.

Verified rows come only from re-verified entries (scores recomputed against the registry's gold answers);
reported rows come only from the transcribed paper tables; the two are kept in separate tables, never ranked
together. Significance groups, per benchmark: `a` = the top entry and every entry not significantly below it
(paired test on the same examples, Holm-corrected across an entry's benchmarks), `b` = significantly below it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.verification.report import VerificationReport
from evalsuite.leaderboard.submission import SubmissionInfo, split_and_subset, split_label
from evalsuite.metrics.registry import get_metric, list_metrics, one_sample_metric
from evalsuite.runs.schema import MetricSummary
from evalsuite.reported import ReportedTable, list_reported, load_reported
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
    # A sampled (multi-seed) task's per-question columns (avg@K, maj@K, pass@k), computed once from its records.
    _per_question: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        assert self.report.info is not None
        return self.report.info.name

    def samples(self, task: str) -> int:
        """K: the trajectories per question of the entry's run of `task` (1: one each, a greedy run)."""
        records = self.report.tasks[task].records
        return 1 if not records or records[0].sample is None else max(r.sample or 0 for r in records) + 1

    def _name(self, task: str, metric: str) -> str | None:
        """The name `metric` goes by in the entry's summary of `task`: itself, or for a one-trajectory run the
        metric an avg@K / maj@K / pass@1 equals on one sample (EM for EM avg@K); None when the entry lacks it."""
        verified = self.report.tasks.get(task)
        if verified is None:
            return None
        if metric in verified.summary.metrics:
            return metric
        single = one_sample_metric(metric)
        if single is not None and single in verified.summary.metrics and self.samples(task) == 1:
            return single
        return None

    def summary(self, task: str, metric: str) -> MetricSummary:
        """The recomputed mean and interval of `metric` on `task` (see `_name` for a one-trajectory run)."""
        name = self._name(task, metric)
        assert name is not None, f"{self.id} has no {metric} on {task}"
        return self.report.tasks[task].summary.metrics[name]

    def scores(self, task: str, metric: str) -> dict[str, float]:
        """Recomputed per-example scores of one task, by example id (a sampled run: per question, its avg@K,
        maj@K or pass@k, so a paired test has one value per question)."""
        name = self._name(task, metric) or metric
        records = self.report.tasks[task].records
        if self.samples(task) == 1:
            return {r.id: r.metrics[name] for r in records}
        if task not in self._per_question:
            from evalsuite.runs.sampled import sampled_task

            part = sampled_task(task, records)
            self._per_question[task] = {
                m: dict(zip(part.ids.tolist(), values.tolist())) for m, values in part.metrics.items()
            }
        return self._per_question[task][name]

    def has(self, task: str, metric: str) -> bool:
        """Whether the entry covers `task` and its task is scored with `metric`."""
        return self._name(task, metric) is not None

    def covers(self, column: TaskSplit, metric: str) -> bool:
        """Whether the entry covers this task *on this split*, scored with `metric`."""
        return self.has(column.task, metric) and self.report.tasks[column.task].split == column.split


# The metrics over samples that get a leaderboard table when an entry holds a sampled (multi-seed) run: avg@K of
# these, and maj@K and pass@K (K: the run's own) of EM. One-trajectory entries join the avg@K and maj@K tables as K = 1.
SAMPLED_TABLE_METRICS = ("em", "cover_em", "f1")


def leaderboard_metrics(entries: Sequence[Entry] = ()) -> dict[str, str]:
    """name → label of the metrics with a leaderboard table: registered ones in [0, 1] that macro-average over
    benchmarks (the table's Avg column), in registration order. A metric registered later gets its table at
    the next build, computed from every entry's verified predictions. Then, when `entries` hold sampled runs, their
    metrics over samples (`sampled_metrics`)."""
    return {m.name: m.label for m in list_metrics() if m.average == "macro" and m.percent} | sampled_metrics(entries)


def sampled_metrics(entries: Sequence[Entry]) -> dict[str, str]:
    """name → label, with K shown, of the metrics over samples the entries' sampled runs hold: avg@K of EM,
    cover-EM and F1, maj@K of EM, and pass@K of EM at each sampled run's own K ("EM avg@4"; "EM avg@2/4" when
    entries sample differently: avg@K estimates the same one-sample accuracy whatever K)."""
    ks: dict[str, set[int]] = {}
    for entry in entries:
        for task, verified in entry.report.tasks.items():
            k = entry.samples(task)
            if k < 2:
                continue
            for name in (*(f"{m}_avg" for m in SAMPLED_TABLE_METRICS), "em_maj", f"em_pass@{k}"):
                if name in verified.summary.metrics:
                    ks.setdefault(name, set()).add(k)
    order = [*(f"{m}_avg" for m in SAMPLED_TABLE_METRICS), "em_maj"]
    names = sorted(
        ks, key=lambda n: (order.index(n) if n in order else len(order), int(n.rpartition("@")[2]) if "@" in n else 0)
    )
    return {n: get_metric(n).label.replace("@K", "@" + "/".join(map(str, sorted(ks[n])))) for n in names}


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


def is_subset_column(column: TaskSplit) -> bool:
    """Whether the column holds a submitter-chosen subset of a split (`test@first:40`, `test_sub1000@sample:5:8`):
    shown in a column of its own, labelled with its size, and never averaged with whole splits."""
    return split_and_subset(column.split)[1] is not None


def split_columns(entries: Sequence[Entry]) -> list[TaskSplit]:
    """The (task, split) pairs the entries cover: whole splits in `task_columns` order, each task's eval split
    first, then the subset columns (never averaged) in the same order."""
    pairs = {TaskSplit(t, v.split) for e in entries for t, v in e.report.tasks.items()}
    order = {task: i for i, task in enumerate(task_columns(entries))}

    def eval_first(column: TaskSplit) -> tuple[int, int, int, str]:
        try:
            evaluated = get_task(column.task).eval_split == column.split
        except EvalsuiteError:
            evaluated = False
        return int(is_subset_column(column)), order[column.task], 0 if evaluated else 1, column.split

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
    trained: str = ""  # verified rows: the declared training reward and turn limit (the card's "trained with" line)
    # The rank group: the whole task splits the Avg is taken over ("" for a row without one). Rows are ranked by Avg
    # only within a group: averages over different questions are never ordered against each other.
    group: str = ""


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

    def groups(self) -> list[tuple[str, list[Row]]]:
        """The rows by rank group, in table order: each group is sorted (and re-sorted on the site) on its own."""
        grouped: dict[str, list[Row]] = {}
        for row in self.rows:
            grouped.setdefault(row.group, []).append(row)
        return list(grouped.items())


def task_label(task: str) -> str:
    try:
        return get_task(task).display_name
    except EvalsuiteError:
        return task


def columns(tasks: Sequence[str] | None = None) -> list[Column]:
    """The benchmark columns (default: every registered task), with
    the in-domain/out-of-domain note for the NQ+HotpotQA training mix."""
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
    label = task_label(column.task) if evaluated else f"{task_label(column.task)} ({split_label(column.split)})"
    title += "" if evaluated else "; ranked only against entries on the same split"
    title += "; a subset: never averaged with whole splits" if is_subset_column(column) else ""
    return Column(column.key, label, title)


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
    top = max(paired, key=lambda e: (e.summary(task, metric).mean, e.id))
    if len(paired) < 2:
        return top.id, {}
    systems = [SystemScores(e.id, {task: e.scores(task, metric)}) for e in paired]
    result = compare(
        systems,
        baseline=top.id,
        metric=metric,
        n_resamples=SIGNIFICANCE_RESAMPLES,
        n_permutations=SIGNIFICANCE_RESAMPLES,
    )
    return top.id, {e.id: result.differences[(e.id, task)].p_value for e in paired if e.id != top.id}


def verified_table(
    entries: Sequence[Entry], metric: str, entry_href: str = "entries/{id}/index.html", label: str | None = None
) -> MetricTable:
    """One setting's verified rows for one metric: per-(task, split) means with 95% CIs and significance groups.

    Each column is one task on one split (a subset of a split is a column of its own), so a question set is only
    ranked against the same question set. An entry's Avg is its mean over the whole task splits it covers (never a
    subset column), and rows are ranked by it only within their rank group, the entries averaged over the same
    columns: another entry's column never takes an Avg away, and no average is ordered against one over other
    questions. Each row shows its coverage."""
    label = label or leaderboard_metrics(entries)[metric]
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
            s = entry.summary(task, metric)
            cell = Cell(
                value=_pct(s.mean), text=f"{100 * s.mean:.1f}", ci=f"[{100 * s.ci_low:.1f}, {100 * s.ci_high:.1f}]"
            )
            failed = f" ({verified.summary.n_failed} failed, scored 0)" if verified.summary.n_failed else ""
            k = entry.samples(task)
            samples = (
                f", K = {k} samples per question (intervals over questions)"
                if k > 1
                else (", one trajectory per question (K = 1)" if one_sample_metric(metric) else "")
            )
            title = (
                f"{task_label(task)} {verified.split}, n={verified.summary.n}{failed}{samples}: "
                f"{label} {100 * s.mean:.2f}, 95% CI {cell.ci} ({interval_method(metric)})"
            )
            if tops[column] == entry.id:
                cell.group, cell.css = "a", "top"
                title += "; top entry of this column"
            elif (entry.id, column) in adjusted:
                p = adjusted[(entry.id, column)]
                cell.group = "b" if p <= ALPHA else "a"
                cell.css = "sig-below" if cell.group == "b" else ""
                title += (
                    f"; vs top: Holm-adjusted p = {p:.3g} "
                    f"({'significantly below' if cell.group == 'b' else 'not significantly different'})"
                )
            else:
                title += "; not tested against the top (no other entry on this split)"
            cell.title = title
            cells.append(cell)
        averaged = averaged_columns(entry, metric, splits)
        table.rows.append(
            Row(
                name=info.name,
                badge="verified",
                cells=cells,
                average=_average(entry, metric, splits),
                group=group_label(averaged),
                href=entry_href.format(id=entry.id),
                method=entry.report.method_label(),
                trained=trained_line(info),
                model=info.model.name,
                note=entry.report.paper_note(),
                proof=entry.report.proof_line(),
            )
        )
    table.rows.sort(key=rank_order(splits))
    return table


def trained_line(info: SubmissionInfo) -> str:
    """A row's "trained with" line: the declared training reward and turn limit (max_turns 0: no search turn)."""
    turns = info.setting.max_turns
    shown = "not declared" if turns is None else f"{turns}" + (" (no search)" if turns == 0 else "")
    return f"training reward: {info.training_reward or 'not declared'} · max_turns {shown}"


def rank_order(columns: Sequence[TaskSplit]) -> Callable[[Row], tuple[int, int, str, float]]:
    """How rows are ordered: rank groups averaged over more columns first (then by their columns), rows without
    an Avg last; within a group, by Avg, highest first."""
    labels = [column_name(c) for c in columns]

    def order(row: Row) -> tuple[int, int, str, float]:
        names = row.group.split(", ") if row.group else []
        value = row.average.value if row.average.value is not None else 0.0
        return int(not names), -len(names), ",".join(f"{labels.index(n):04d}" for n in names if n in labels), -value

    return order


def column_name(column: TaskSplit) -> str:
    """A column as an Avg's title and a rank group name it: `Bamboogle test`."""
    return f"{task_label(column.task)} {column.split}"


def averaged_columns(entry: Entry, metric: str, columns: Sequence[TaskSplit]) -> list[TaskSplit]:
    """The columns an entry's Avg is taken over: the whole task splits it covers (never a subset)."""
    return [c for c in columns if not is_subset_column(c) and entry.covers(c, metric)]


def group_label(columns: Sequence[TaskSplit]) -> str:
    """The rank group of an Avg over `columns` ("" for none)."""
    return ", ".join(column_name(c) for c in columns)


def entry_average(entry: Entry, metric: str, columns: Sequence[TaskSplit]) -> float | None:
    """An entry's Avg over `averaged_columns` (None when it covers no whole split)."""
    averaged = averaged_columns(entry, metric, columns)
    if not averaged:
        return None
    return float(np.mean([entry.summary(c.task, metric).mean for c in averaged]))


def _average(entry: Entry, metric: str, columns: Sequence[TaskSplit]) -> Cell:
    """The mean over the whole task splits the entry covers; subset columns never count. Coverage is shown, and
    the title names the columns, the rank group this Avg is compared in."""
    whole = [c for c in columns if not is_subset_column(c)]
    averaged = averaged_columns(entry, metric, columns)
    coverage = f"{len(averaged)} of {len(whole)} task splits"
    mean = entry_average(entry, metric, columns)
    if mean is None:
        return Cell(coverage=coverage, title="no average: this entry covers no whole task split (subsets never count)")
    return Cell(
        value=_pct(mean),
        text=f"{100 * mean:.1f}",
        coverage=coverage,
        title=f"unweighted mean over {len(averaged)} whole task split{'s' if len(averaged) != 1 else ''} "
        f"({group_label(averaged)}); ranked only against entries averaged over the same task splits",
    )


# Termination and cost (evalsuite.metrics.termination; searches per question): how rollouts ended, what they took.
COST_METRICS = (
    "stop_answer",
    "stop_max_turns",
    "stop_max_tokens",
    "stop_error",
    "n_searches",
    "prompt_tokens",
    "completion_tokens",
)


def cost_name(entry: Entry, task: str, metric: str) -> str:
    """A per-example metric's name in the entry's summary of `task`: a sampled run summarizes its avg@K."""
    return metric if entry.samples(task) == 1 else f"{metric}_avg"


@dataclass
class CostRow:
    name: str
    href: str
    samples: str  # "1", "4", or "1/4" when its benchmarks differ
    cells: list[Cell]


@dataclass
class CostTable:
    columns: list[Column]
    rows: list[CostRow]


def cost_table(entries: Sequence[Entry], entry_href: str = "entries/{id}/index.html") -> CostTable | None:
    """One setting's termination and cost per entry, over all the questions of its verified benchmarks (their
    n-weighted mean; a sampled run: each question's mean over its samples): shares of rollouts that answered, ran
    out of turns or of tokens, or failed, and searches, prompt and completion tokens per question. Trajectories
    imported from elsewhere record no stop reason or token count ("–"); None when no entry records any."""
    recorded = [
        e
        for e in entries
        if any(e.report.tasks[t].summary.metrics.get(cost_name(e, t, "stop_answer")) for t in e.report.tasks)
    ]
    if not recorded:
        return None
    columns = []
    for name in COST_METRICS:
        spec = get_metric(name)
        columns.append(Column(name, spec.label + (" (%)" if spec.percent else " / question"), spec.description))
    rows = []
    for entry in entries:
        cells = []
        for name in COST_METRICS:
            spec = get_metric(name)
            parts = [
                (v.summary.n, m.mean)
                for t, v in entry.report.tasks.items()
                if (m := v.summary.metrics.get(cost_name(entry, t, name))) is not None
            ]
            if not parts or (name != "n_searches" and entry not in recorded):
                cells.append(
                    Cell(title="not recorded: trajectories imported from elsewhere carry no stop reason or token count")
                )
                continue
            n = sum(count for count, _ in parts)
            mean = sum(count * value for count, value in parts) / n
            text = f"{100 * mean:.1f}" if spec.percent else f"{mean:.1f}" if name == "n_searches" else f"{mean:.0f}"
            cells.append(
                Cell(
                    value=round(100 * mean if spec.percent else mean, 6),
                    text=text,
                    title=f"{spec.label}: mean over {n} questions of {len(parts)} benchmark(s)",
                )
            )
        ks = sorted({entry.samples(t) for t in entry.report.tasks})
        rows.append(CostRow(entry.name, entry_href.format(id=entry.id), "/".join(map(str, ks)), cells))
    return CostTable(columns, rows)


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
    return Cell(
        value=pct,
        text=text + value.marks,
        title=f"as printed in {table.paper} Table {table.table}: {value.printed}{value.marks}",
    )


def reported_tables(root: Path | None = None) -> dict[str, MetricTable]:
    """Rows of every transcribed paper table that reports a leaderboard metric per benchmark, one table per metric."""
    metrics = leaderboard_metrics()
    registered = task_names()
    tables = {m: MetricTable(m, label, columns(registered)) for m, label in metrics.items()}
    for key in list_reported(root):
        table = load_reported(key, root)
        if table.scale == "raw":
            continue
        for metric in metrics:
            by_task = {
                c.dataset: k
                for k, c in table.columns.items()
                if c.metric == metric and c.dataset in registered and not c.average_of
            }
            if not by_task:
                continue
            avg_key = next(
                (
                    k
                    for k, c in table.columns.items()
                    if c.metric == metric and c.average_of and c.dataset is None and k in ("avg", f"avg.{metric}")
                ),
                None,
            )
            for label, row in table.rows.items():
                cells = [_reported_cell(table, label, by_task.get(task)) for task in registered]
                if all(c.value is None for c in cells):
                    continue
                average = _reported_cell(table, label, avg_key)
                if average.value is not None:
                    average.ci = "as printed"
                    average.title = "the paper's own average over its benchmarks, as printed"
                model = row.model or ""
                tables[metric].rows.append(
                    Row(
                        name=f"{row.method}" + (f" [{row.train_set}]" if row.train_set else ""),
                        badge="reported",
                        cells=cells,
                        average=average,
                        method=row.method,
                        model=model,
                        citation=table.citation,
                        citation_title=f"{table.caption} (transcribed from {table.citation})",
                    )
                )
    return tables
