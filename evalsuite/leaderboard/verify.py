"""`evalsuite leaderboard verify`: accept a submission only if every score recomputes from its trajectories.

Every prediction must be what the method's own parser reads from the recorded trajectory (an evalsuite
run's: from the model's turns within it, observations left out, as the rollout loop reads it); scores are
recomputed against the task registry's gold answers (never the submission's own), exactly the metrics each
run records it was scored with, at the definition versions it records (metrics registered later are
computed for the site, never held against an entry); every declared task split must be a registered split
name, covered id for id; the declared setting (method, corpus, retriever, top-k, turns) must be what every
run manifest records; and the submission may hold only the files its format defines, each matching its
checksum, UTF-8 and within the size limits. docs/guarantees.md says what this proves and what it cannot.

This module runs the checks; each concern is a module of `evalsuite.leaderboard.verification`: `files` (the
submission's files and their schema), `splits` (the declared splits and their registry rows), `records` (ids,
samples and predictions), `scores` (the rescoring and the claimed summary), `declared_setting` (the declared setting
against the manifests and the paper) and `report` (what was found, and the proof levels).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.submission import (
    PREDICTIONS_GZ,
    RUNS_DIR,
    SUBMISSION_FILE,
    RunRef,
    SubmissionFile,
    SubmissionInfo,
    opened_submission,
)
from evalsuite.metrics.registry import per_sample_name
from evalsuite.runs import ExampleRecord, Manifest, MetricsFile, summarize
from evalsuite.runs.schema import MANIFEST_FILE, METRICS_FILE, PREDICTIONS_FILE
from evalsuite.leaderboard.verification.declared_setting import check_settings, paper_setting_check
from evalsuite.leaderboard.verification.files import Limits, check_files, load_model, read_records
from evalsuite.leaderboard.verification.records import (
    check_ids,
    check_record,
    model_text_reader,
    parsing_method,
    prediction_parser,
    reads_model_text,
)
from evalsuite.leaderboard.verification.report import VerificationReport, VerifiedTask
from evalsuite.leaderboard.verification.scores import check_summary, rescore, scored_with, shown_record
from evalsuite.leaderboard.verification.splits import check_manifest_split, declared_split_rows


def verify_run(
    root: Path,
    ref: RunRef,
    info: SubmissionInfo,
    data_dir: str | Path | None,
    limits: Limits,
    report: VerificationReport,
) -> None:
    """Verify one packed run: manifest, predictions against the
    trajectories and the registry, and the claimed summary."""
    name = ref.name
    where = f"{RUNS_DIR}/{name}"
    run_dir = root / RUNS_DIR / name
    if not run_dir.is_dir():
        report.add("schema", where, "declared in submission.json but missing")
        return
    manifest = load_model(run_dir / MANIFEST_FILE, Manifest, limits, f"{where}/{MANIFEST_FILE}", report)
    claimed = load_model(run_dir / METRICS_FILE, MetricsFile, limits, f"{where}/{METRICS_FILE}", report)
    lines = read_records(run_dir, where, limits, report)
    if manifest is not None:
        report.manifests[name] = manifest
    try:
        method = parsing_method(manifest, info.method)
        parse = prediction_parser(method)
        model_text = model_text_reader(method) if reads_model_text(manifest) else None
    except EvalsuiteError as exc:
        report.add(
            "unknown-method", f"{where}/{MANIFEST_FILE}", f"{exc.message} ({exc.hint})" if exc.hint else exc.message
        )
        return
    if lines is None:
        return  # the unreadable file is the problem; listing every id as missing would bury it
    pred_where = f"{where}/{PREDICTIONS_GZ if (run_dir / PREDICTIONS_GZ).is_file() else PREDICTIONS_FILE}"
    by_task: dict[str, list[tuple[int, ExampleRecord]]] = defaultdict(list)
    for lineno, record in lines:
        by_task[record.task].append((lineno, record))
    for task in sorted(set(by_task) - set(ref.tasks)):
        report.add(
            "undeclared-task",
            pred_where,
            f"{len(by_task[task])} records of task {task!r}, which submission.json does not declare for this run",
        )
    rescored_all: list[ExampleRecord] = []
    versions, declared = scored_with(claimed, f"{where}/{METRICS_FILE}", report)
    for task, split in ref.tasks.items():
        declared_at = f"{SUBMISSION_FILE}: runs[{name}].tasks.{task}"
        found = declared_split_rows(task, split, data_dir, root, declared_at, report)
        if found is None:
            continue
        loaded, n_split = found
        check_manifest_split(manifest, task, split, loaded, n_split, f"{where}/{MANIFEST_FILE}", report)
        gold = {row.id: row for row in loaded.rows}
        kept = check_ids(by_task.get(task, []), gold, pred_where, f"{task}/{split}", report)
        claimed_task = claimed.tasks.get(task) if claimed is not None else None
        # The metrics this task was scored with: those of the run's record that its claimed summary holds. A sampled
        # run's summary holds metrics over samples (em_avg, em_pass@4): each record is checked on the per-sample
        # metric they are computed from, and the summary check below recomputes them from the rescored samples.
        checked = {
            per_sample_name(m): v for m, v in versions.items() if claimed_task is None or m in claimed_task.metrics
        }
        per_record = None if declared is None else {per_sample_name(m) for m in declared}
        # Recomputed records follow the registry's order (a question's samples in sample order), so the site and
        # the tests see a stable order.
        rescored = {
            (r.id, r.sample): rescore(
                lineno,
                check_record(lineno, r, split, ref, parse, pred_where, report, model_text),
                gold[r.id],
                pred_where,
                report,
                checked,
                per_record,
            )
            for lineno, r in kept
        }
        by_question: dict[str, list[ExampleRecord]] = defaultdict(list)
        for (question, _), record in sorted(rescored.items(), key=lambda item: item[0][1] or 0):
            by_question[question].append(record)
        ordered = [r for row in loaded.rows for r in by_question.get(row.id, [])]
        rescored_all.extend(ordered)
        records = [shown_record(r) for r in ordered]
        if len(by_question) == len(gold):
            report.tasks[task] = VerifiedTask(
                task,
                loaded.split,
                name,
                records,
                summarize(records).tasks[task],
                loaded.source,
                loaded.source_hash,
                checked,
            )
    if claimed is not None and rescored_all and not any(p.check in ("missing-id", "gold") for p in report.problems):
        check_summary(claimed, summarize(rescored_all), f"{where}/{METRICS_FILE}", report, versions)


def verify_submission(
    path: str | Path, data_dir: str | Path | None = None, limits: Limits | None = None
) -> VerificationReport:
    """Verify a submission directory or tarball; the report lists every problem and the recomputed scores."""
    limits = limits or Limits()
    report = VerificationReport(submission=str(path))
    with opened_submission(Path(path), limits.max_total_bytes, limits.max_files) as root:
        meta = load_model(root / SUBMISSION_FILE, SubmissionFile, limits, SUBMISSION_FILE, report)
        check_files(root, limits, report, {ref.name for ref in meta.runs} if meta is not None else None)
        if meta is None or any(p.check == "oversized" and p.where == "." for p in report.problems):
            return report
        report.meta = meta
        seen: dict[str, str] = {}
        for ref in meta.runs:
            for task in ref.tasks:
                if task in seen:
                    report.add(
                        "duplicate-task",
                        SUBMISSION_FILE,
                        f"task {task!r} is declared by runs {seen[task]!r} and {ref.name!r}",
                    )
                seen.setdefault(task, ref.name)
            verify_run(root, ref, meta.info, data_dir, limits, report)
        if not meta.runs:
            report.add("schema", SUBMISSION_FILE, "declares no runs")
        check_settings(meta.info, report)
        report.paper_setting = paper_setting_check(meta.info, meta.runs, report.manifests, report.settings)
    return report
