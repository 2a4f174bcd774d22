"""Run directories as table inputs: per-example scores by metric, names, baseline choice and settings provenance."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory
from evalsuite.stats import SystemScores

# The settings that make two rows comparable (docs/architecture.md); a row that differs from the baseline is marked.
SETTING_FIELDS = ("corpus", "retriever", "topk", "max_turns", "subset")
SETTINGS_MARK = "§"


@dataclass
class RunData:
    """One run directory, read once: its name in tables, manifest and scored examples."""

    name: str
    path: Path
    manifest: Manifest
    records: list[ExampleRecord]

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(r.task for r in self.records))

    def scores(self, metric: str) -> SystemScores:
        """Per-example scores of one metric; failed examples count 0, as in metrics.json."""
        tasks: dict[str, dict[str, float]] = {}
        for record in self.records:
            if metric in record.metrics:
                value = record.metrics[metric]
            elif record.status == "failed":
                value = 0.0
            else:
                known = ", ".join(sorted(record.metrics)) or "none"
                raise DataError(f"{self.path / 'predictions.jsonl'}: example {record.id!r} ({record.task}) has no metric {metric!r} (it has: {known})",
                                hint="pick another --metric or rescore the run with `evalsuite score`")
            by_id = tasks.setdefault(record.task, {})
            if record.id in by_id:
                raise DataError(f"{self.path / 'predictions.jsonl'}: example id {record.id!r} appears twice in task {record.task!r}",
                                hint="a run holds each example once; rescore or deduplicate the run")
            by_id[record.id] = float(value)
        return SystemScores(self.name, tasks)

    def settings(self) -> dict[str, str]:
        """The comparability settings as printable text ('not recorded' when the manifest lacks them)."""
        m = self.manifest
        values = {"corpus": _describe(m.corpus), "retriever": _describe(m.retriever), "topk": m.topk, "max_turns": m.max_turns,
                  "subset": m.subset}
        return {k: "not recorded" if v in (None, "", {}) else str(v) for k, v in values.items()}


def _describe(setting: dict) -> str | None:
    if not setting:
        return None
    for key in ("name", "kind", "type", "path"):
        if setting.get(key):
            return str(setting[key])
    return ", ".join(f"{k}={v}" for k, v in sorted(setting.items()))


def load_runs(paths: Sequence[str | Path]) -> list[RunData]:
    """Read run directories; each is named by its directory (parent/name when two directories share a name)."""
    if not paths:
        raise EvalsuiteError("no run directories given", hint="pass one or more directories written by `evalsuite run` or `evalsuite score`")
    dirs = [RunDirectory(p) for p in paths]
    names = [d.path.resolve().name for d in dirs]
    runs = []
    for directory, name in zip(dirs, names):
        if names.count(name) > 1:
            name = f"{directory.path.resolve().parent.name}/{name}"
        manifest = directory.read_manifest()
        records = directory.read_predictions()
        if not records:
            raise DataError(f"{directory.predictions_path}: no examples", hint="the run has not written predictions yet")
        runs.append(RunData(name, directory.path, manifest, records))
    if len({r.name for r in runs}) != len(runs):
        raise EvalsuiteError("two run directories have the same name and parent", hint="pass each run once")
    return runs


def resolve_baseline(runs: Sequence[RunData], wanted: str | None) -> str:
    """The baseline's run name: an exact run name, else the one run whose manifest method matches; default the first run."""
    if wanted is None:
        return runs[0].name
    names = [r.name for r in runs]
    if wanted in names:
        return wanted
    by_method = [r.name for r in runs if r.manifest.method == wanted]
    if len(by_method) == 1:
        return by_method[0]
    if len(by_method) > 1:
        raise EvalsuiteError(f"baseline {wanted!r} matches the method of several runs: {', '.join(by_method)}",
                             hint="pass the run's directory name instead")
    close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.3)
    raise EvalsuiteError(f"baseline {wanted!r} is not one of the runs", hint=f"did you mean {', '.join(close)}?" if close else f"runs: {', '.join(names)}")


def settings_notes(runs: Sequence[RunData], reference: str) -> tuple[dict[str, str], list[str]]:
    """Row marks for runs whose settings differ from the reference run, and provenance footnotes."""
    by_name = {r.name: r for r in runs}
    base = by_name[reference].settings()
    labels = {"corpus": "corpus", "retriever": "retriever", "topk": "top-k", "max_turns": "max turns", "subset": "subset"}
    notes = ["Settings of " + reference + ": " + ", ".join(f"{labels[k]} {base[k]}" for k in SETTING_FIELDS) + "."]
    marks = {}
    for run in runs:
        own = run.settings()
        differ = [k for k in SETTING_FIELDS if own[k] != base[k]]
        if differ and run.name != reference:
            marks[run.name] = SETTINGS_MARK
            notes.append(f"{SETTINGS_MARK} {run.name} differs: " + ", ".join(f"{labels[k]} {own[k]}" for k in differ) + ".")
    sources = []
    for run in runs:
        origin = run.manifest.source.get("path") if run.manifest.source else None
        sources.append(f"{run.name} = {run.path}" + (f" (imported from {Path(origin).name})" if origin else ""))
    notes.append("Runs: " + "; ".join(sources) + ".")
    return marks, notes
