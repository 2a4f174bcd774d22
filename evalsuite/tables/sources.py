"""Run directories as table inputs: per-example scores by metric, names, baseline choice and settings provenance."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from evalsuite.errors import DataError, EvalsuiteError, did_you_mean
from evalsuite.metrics.judged import JUDGED_METRICS
from evalsuite.metrics.registry import one_sample_metric, per_sample_name
from evalsuite.runs import Manifest, MetricsFile, RunDirectory
from evalsuite.runs.columns import ScoreColumns, read_scores, write_scores
from evalsuite.runs.schema import PREDICTIONS_FILE
from evalsuite.runs.comparable import Use, settings_for
from evalsuite.runs.run_setting import RunSetting
from evalsuite.stats import SystemScores
from evalsuite.tables.golds import GoldBasis, registry_basis, rescore_with_registry
from evalsuite.stats.intervals import Interval, method_name

if TYPE_CHECKING:
    from evalsuite.judges.evaluate import JudgedAccuracy

# A row whose settings (runs.comparable's, for tables) differ from the baseline's is marked.
SETTINGS_MARK = "§"
JUDGMENTS_FILE = (
    "judgments.jsonl"  # evalsuite.judges.evaluate.JUDGMENTS_FILE, named here to import it only when present
)


@dataclass
class RunData:
    """One run directory, read once: its name in tables, manifest and per-example scores."""

    name: str
    path: Path
    manifest: Manifest
    columns: ScoreColumns
    metrics: MetricsFile | None = None  # metrics.json, when it was computed by this version's interval method
    # The registry gold files the scores were recomputed against, or what was used instead (tables/golds.py)
    golds: GoldBasis | None = None
    # acc_judge's verdicts: whose panel judged, and those left out (evalsuite.judges.evaluate.accuracy_verdicts)
    judged: JudgedAccuracy | None = None

    @property
    def tasks(self) -> list[str]:
        return list(self.columns.tasks)

    def scores(self, metric: str) -> SystemScores:
        """Per-example scores of one metric; failed examples count 0, as in metrics.json."""
        tasks: dict[str, dict[str, float]] = {}
        where = self.path / PREDICTIONS_FILE
        for task, data in self.columns.tasks.items():
            values = data.metrics.get(metric)
            if values is None and self.columns.samples == 1 and (single := one_sample_metric(metric)) is not None:
                values = data.metrics.get(single)  # a greedy run is K = 1: its EM is its EM avg@1, maj@1 and pass@1
            values = np.full(data.ids.shape, np.nan) if values is None else values
            missing = np.isnan(values) & ~data.failed
            if missing.any():
                first = int(np.flatnonzero(missing)[0])
                known = ", ".join(sorted(m for m, v in data.metrics.items() if not np.isnan(v[first]))) or "none"
                judged = per_sample_name(metric) in JUDGED_METRICS
                raise DataError(
                    f"{where}: example {str(data.ids[first])!r} ({task}) has no metric {metric!r} (it has: {known})",
                    hint=f"judge every example: evalsuite judge {self.path} --panel PANEL.yaml --metrics accuracy"
                    if judged
                    else "pick another --metric or rescore the run with `evalsuite score`",
                )
            by_id = dict(zip(data.ids.tolist(), np.where(np.isnan(values), 0.0, values).tolist()))
            if len(by_id) != data.ids.size:
                unique, counts = np.unique(data.ids, return_counts=True)
                raise DataError(
                    f"{where}: example id {str(unique[counts > 1][0])!r} appears twice in task {task!r}",
                    hint="a run holds each example once; rescore or deduplicate the run",
                )
            tasks[task] = by_id
        return SystemScores(self.name, tasks, self._stored_intervals(metric))

    def seed_sd(self, metric: str, tasks: Sequence[str]) -> float | None:
        """A multi-seed (sampled) run's standard deviation of one seed's mean of `metric`'s per-sample metric (EM for
        em_avg) on `tasks` (one benchmark, or the macro-average of several), estimated from each question's multiset of
        samples (each task's spread, evalsuite.metrics.samples.sample_spread), so no sample label moves it: for the
        average of T benchmarks, sqrt(sum of the spreads squared) / T, the benchmarks' questions being independent.
        None for a one-trajectory run, a metric that is not an avg@K, or tasks the run lacks."""
        if self.columns.samples < 2 or not metric.endswith("_avg"):
            return None
        base = metric[: -len("_avg")]
        found = [self.columns.spreads.get(task, {}).get(base) for task in tasks]
        spreads = sorted(s for s in found if s is not None)
        if not found or len(spreads) != len(found):
            return None
        return float(np.sqrt(sum(s * s for s in spreads)) / len(spreads))

    def _stored_intervals(self, metric: str) -> dict[str, Interval]:
        """metrics.json's interval per task for this metric (compare() checks each against the scores' mean)."""
        if self.metrics is None:
            return {}
        stored = {}
        for task, summary in self.metrics.tasks.items():
            data = self.columns.tasks.get(task)
            if metric in summary.metrics and data is not None and summary.n == data.ids.size:
                m = summary.metrics[metric]
                stored[task] = Interval(m.mean, m.ci_low, m.ci_high)
        return stored

    def settings(self) -> dict[str, str]:
        """The comparability settings as printable text ('not recorded' when the manifest lacks them)."""
        setting = RunSetting.from_manifest(self.manifest)
        # The corpus by content (a known corpus's name only when its passages and hash match), the retriever by its
        # kind and known encoder: two rows are comparable when these agree, whatever their files are called.
        values = {field.name: field.shown_value(setting) for field in settings_for(Use.TABLE)}
        return {k: "not recorded" if v in (None, "", {}) else str(v) for k, v in values.items()}


def load_runs(paths: Sequence[str | Path]) -> list[RunData]:
    """Read run directories; each is named by its directory (parent/name when two directories share a name).

    Scores come from predictions.jsonl rescored against the registry's gold answers where the task data is here
    (tables/golds.py; the golds a predictions.jsonl carries are never used then), else as stored; the columns are
    cached for its exact bytes and those gold files (runs/columns.py).
    """
    if not paths:
        raise EvalsuiteError(
            "no run directories given",
            hint="pass one or more directories written by `evalsuite run` or `evalsuite score`",
        )
    dirs = [RunDirectory(p) for p in paths]
    names = [d.path.resolve().name for d in dirs]
    runs = []
    for directory, name in zip(dirs, names):
        if names.count(name) > 1:
            name = f"{directory.path.resolve().parent.name}/{name}"
        manifest = directory.read_manifest()
        basis = registry_basis(manifest)
        columns = read_scores(directory.path, basis.cache_key())
        if columns is None:
            records = directory.read_predictions()
            if basis.found:
                records = rescore_with_registry(records, basis)
                write_scores(directory.path, records, basis.cache_key(), {"unknown_ids": basis.unknown_ids})
            columns = ScoreColumns.from_records(records)
        else:
            basis.unknown_ids = columns.counts.get("unknown_ids", 0)
        # acc_judge from `evalsuite judge --metrics accuracy`; a judgments.jsonl not a regular file is refused there
        if os.path.lexists(directory.path / JUDGMENTS_FILE):
            from evalsuite.judges.evaluate import add_judged_columns  # the judges' modules only for a judged run

            judged = add_judged_columns(directory.path, columns)
        else:
            judged = None
        if not columns.tasks:
            raise DataError(
                f"{directory.predictions_path}: no examples", hint="the run has not written predictions yet"
            )
        runs.append(RunData(name, directory.path, manifest, columns, _current_metrics(directory), basis, judged))
    if len({r.name for r in runs}) != len(runs):
        raise EvalsuiteError("two run directories have the same name and parent", hint="pass each run once")
    return runs


def _current_metrics(directory: RunDirectory) -> MetricsFile | None:
    """metrics.json if present, readable and written with today's interval methods (else tables recompute them)."""
    try:
        metrics = directory.read_metrics()
    except (EvalsuiteError, ValueError):
        return None
    ci = metrics.extra.get("ci") or {}
    current = (
        ci.get("binary") == method_name("wilson")
        and ci.get("continuous") == method_name("bootstrap")
        and ci.get("bounded") == method_name("effective_wilson")
    )
    return metrics if current else None


def resolve_baseline(runs: Sequence[RunData], wanted: str | None) -> str:
    """The baseline's run name: an exact run name, else the one
    run whose manifest method matches; default the first run."""
    if wanted is None:
        return runs[0].name
    names = [r.name for r in runs]
    if wanted in names:
        return wanted
    by_method = [r.name for r in runs if r.manifest.method == wanted]
    if len(by_method) == 1:
        return by_method[0]
    if len(by_method) > 1:
        raise EvalsuiteError(
            f"baseline {wanted!r} matches the method of several runs: {', '.join(by_method)}",
            hint="pass the run's directory name instead",
        )
    raise EvalsuiteError(
        f"baseline {wanted!r} is not one of the runs",
        hint=did_you_mean(wanted, names, f"runs: {', '.join(names)}", cutoff=0.3),
    )


def settings_notes(
    runs: Sequence[RunData], reference: str, metrics: Sequence[str] = ()
) -> tuple[dict[str, str], list[str]]:
    """Row marks for runs whose settings differ from the reference run, and provenance footnotes: for the table's
    `metrics`, where their scores come from (a judged metric is never rescored against the registry's golds: its
    note names the panel that judged it)."""
    by_name = {r.name: r for r in runs}
    base = by_name[reference].settings()
    labels = {field.name: field.label_in(Use.TABLE) for field in settings_for(Use.TABLE)}
    notes = ["Settings of " + reference + ": " + ", ".join(f"{labels[k]} {base[k]}" for k in labels) + "."]
    marks = {}
    for run in runs:
        own = run.settings()
        differ = [k for k in labels if own[k] != base[k]]
        if differ and run.name != reference:
            marks[run.name] = SETTINGS_MARK
            notes.append(
                f"{SETTINGS_MARK} {run.name} differs: " + ", ".join(f"{labels[k]} {own[k]}" for k in differ) + "."
            )
    sources = []
    for run in runs:
        origin = run.manifest.source.get("path") if run.manifest.source else None
        sources.append(f"{run.name} = {run.path}" + (f" (imported from {Path(origin).name})" if origin else ""))
    notes.append("Runs: " + "; ".join(sources) + ".")
    judged = [m for m in metrics if per_sample_name(m) in JUDGED_METRICS]
    if not metrics or len(judged) < len(metrics):
        notes.extend(
            run.golds.note(run.name) for run in runs if run.golds is not None and (run.golds.found or run.golds.missing)
        )
    if judged:
        notes.extend(run.judged.note(run.name) for run in runs if run.judged is not None)
    return marks, notes
