"""The scores: every record rescored against the registry's gold answers with the metrics its run records it was
scored with, and the claimed metrics.json held to the summary of the rescored records."""

from __future__ import annotations

import math
from collections.abc import Collection

from evalsuite.metrics.judged import JUDGED_METRICS
from evalsuite.metrics.termination import RUN_METRICS, STOP_REASONS
from evalsuite.metrics.registry import get_metric, is_registered, per_sample_name
from evalsuite.runs import ExampleRecord, MetricsFile
from evalsuite.runs.schema import LEGACY_METRICS, METRIC_CONVENTION
from evalsuite.scoring import score_record, task_metrics
from evalsuite.tasks.rows import TaskRow, normalize_question
from evalsuite.leaderboard.verification.report import VerificationReport


TOLERANCE = 1e-9


def _format(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.6g}"


def scored_with(
    claimed: MetricsFile | None, where: str, report: VerificationReport
) -> tuple[dict[str, int], set[str] | None]:
    """The metrics a run records it was scored with that can be recomputed here, by definition version, and all the
    names it records (runs scored before metrics.json recorded them: LEGACY_METRICS, version 1). Each must be
    registered here at that version and under this scoring convention, and every registered metric the claimed
    summary gives must be recorded, else the run is refused for it."""
    if claimed is None:
        return {}, None
    if claimed.metric_convention != METRIC_CONVENTION:
        report.add(
            "scoring",
            where,
            f"scored under the metric convention {claimed.metric_convention!r}, this evalsuite "
            f"scores under {METRIC_CONVENTION!r}; rescore the runs with `evalsuite score` and resubmit",
        )
        return {}, None
    versions = claimed.metric_versions if claimed.metric_versions is not None else dict.fromkeys(LEGACY_METRICS, 1)
    usable = {}
    for name, version in versions.items():
        if not is_registered(name):
            report.add("scoring", where, f"scored with metric {name!r}, which this evalsuite does not register")
        elif get_metric(name).version != version:
            report.add(
                "scoring",
                where,
                f"scored with {name} version {version}, this evalsuite computes version "
                f"{get_metric(name).version}; rescore the runs with `evalsuite score` and resubmit",
            )
        else:
            usable[name] = version
    given = {
        m
        for summary in claimed.tasks.values()
        for m in summary.metrics
        if is_registered(m) and per_sample_name(m) not in JUDGED_METRICS
    }  # a judge panel's: not recomputable
    for name in sorted(given - set(versions)):
        report.add("scoring", where, f"claims {name} but its metric_versions do not record scoring with it")
    return usable, set(versions)


def rescore(
    lineno: int,
    record: ExampleRecord,
    row: TaskRow,
    where: str,
    report: VerificationReport,
    checked: Collection[str],
    declared: Collection[str] | None = None,
) -> ExampleRecord:
    """Check one record against its registry row and return it rescored with the registry's gold answers (the
    task's metrics today, plus the `checked` ones to compare). The claims are read only to report a mismatch: the
    `checked` metrics (what the run was scored with) must be given and equal, and a registered metric it gives must
    be one its run `declared`. `shown_record` then keeps only the task's metrics for the site."""
    at = f"{where}:{lineno}"
    if record.golden_answers != row.golden_answers:
        report.add(
            "gold-edited",
            at,
            f"id {record.id!r}: golden_answers {record.golden_answers!r} differ from the registry's "
            f"{row.golden_answers!r}",
        )
    if normalize_question(record.question) != normalize_question(row.question):
        report.add(
            "question-changed",
            at,
            f"id {record.id!r}: question {record.question[:80]!r} is not the registry's {row.question[:80]!r}",
        )
    rescored = record.model_copy(update={"golden_answers": list(row.golden_answers), "question": row.question})
    rescored.metrics = score_record(rescored, list(dict.fromkeys((*own_metrics(record), *checked))))
    claimed = record.metrics
    for name in sorted(set(claimed) - set(declared)) if declared is not None else ():
        if is_registered(name):
            report.add(
                "scoring",
                at,
                f"id {record.id!r}: gives {name}, which its run's metrics.json does not record scoring with",
            )
    for name in sorted(checked):
        if name not in claimed:
            report.add("score", at, f"id {record.id!r}: metric {name!r} is not given")
        elif not _close(claimed[name], rescored.metrics[name]):
            report.add(
                "score",
                at,
                f"id {record.id!r}: claimed {name} {_format(claimed[name])} but recomputed "
                f"{_format(rescored.metrics[name])} against the registry's gold answers",
            )
    return rescored


def own_metrics(record: ExampleRecord) -> list[str]:
    """What verification computes for a record whatever it claims: its task's metrics and, for a record of
    `evalsuite run` (it carries the engine's stop reason), how it ended and its tokens, read from the record itself
    (evalsuite.metrics.termination; imported trajectories record no such reason and get none)."""
    run_record = record.stop_reason in {reason for reasons in STOP_REASONS.values() for reason in reasons}
    return [*task_metrics(record.task), *(RUN_METRICS if run_record else ())]


def shown_record(record: ExampleRecord) -> ExampleRecord:
    """A rescored record as the site shows it: its own metrics only (`own_metrics`), so a claim cannot choose what
    is shown."""
    shown = own_metrics(record)
    return record.model_copy(update={"metrics": {m: v for m, v in record.metrics.items() if m in shown}})


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOLERANCE


def check_summary(
    claimed: MetricsFile, recomputed: MetricsFile, where: str, report: VerificationReport, checked: Collection[str]
) -> None:
    """The claimed metrics.json must equal the summary of the recomputed records: n, and the means and averages
    of the `checked` metrics (what the run was scored with)."""
    for task, summary in recomputed.tasks.items():
        theirs = claimed.tasks.get(task)
        if theirs is None:
            report.add("score", where, f"no claimed scores for task {task!r}")
            continue
        if theirs.n != summary.n:
            report.add("score", where, f"{task}: claimed n {theirs.n} but the predictions hold {summary.n}")
        for name, ours in summary.metrics.items():
            if name not in checked:
                continue
            if name not in theirs.metrics:
                report.add("score", where, f"{task}: metric {name!r} is not given")
            elif not _close(theirs.metrics[name].mean, ours.mean):
                report.add(
                    "score",
                    where,
                    f"{task}: claimed {name} {_format(theirs.metrics[name].mean)} but recomputed {_format(ours.mean)}",
                )
    for task in sorted(set(claimed.tasks) - set(recomputed.tasks)):
        report.add("score", where, f"claims scores for task {task!r}, which the predictions do not hold")
    for group, values in recomputed.averages.items():
        for name, value in values.items():
            if name not in checked:
                continue
            theirs_value = claimed.averages.get(group, {}).get(name)
            if theirs_value is None or not _close(theirs_value, value):
                report.add(
                    "score", where, f"average {group}/{name}: claimed {theirs_value} but recomputed {_format(value)}"
                )
