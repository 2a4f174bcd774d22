"""A submission's declared setting (method, corpus, retriever, top-k, turns: runs.comparable's leaderboard settings)
held to every run manifest, and against the declared method's paper evaluation setting."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from evalsuite.agent.papers import (
    PAPERS,
    PaperCheck,
    corpus_key,
    evaluation_setting,
    method_key,
    recorded_settings,
    run_differences,
    setting_names,
)
from evalsuite.leaderboard.submission import RUNS_DIR, SUBMISSION_FILE, RunRef, Setting, SubmissionInfo
from evalsuite.runs import Manifest
from evalsuite.runs.comparable import Use, names_for
from evalsuite.runs.run_setting import KNOWN_CORPORA, RunSetting
from evalsuite.runs.schema import MANIFEST_FILE

if TYPE_CHECKING:
    from evalsuite.leaderboard.verification.report import VerificationReport


# The settings a submission declares and verification holds to every run manifest (runs.comparable).
SETTINGS = names_for(Use.LEADERBOARD)
# report.settings' value for a setting that submission.json and every run manifest state alike
CONSISTENT_SETTING = "consistent: submission.json and every run manifest state it alike"


def corpus_display(declared: str | None) -> str | None:
    """A declared corpus as a setting key names it: a known corpus by its label (`wiki18.jsonl` → `wiki-18`), any
    other as "custom corpus (NAME)", so a custom name never reads as a known corpus."""
    if declared is None:
        return None
    key = corpus_key(declared)
    known = next((c for c in KNOWN_CORPORA if c.key == key), None)
    return known.label if known is not None else f"custom corpus ({declared})"


def retriever_display(declared: str | None) -> str | None:
    """A declared retriever in its canonical spelling (`E5`, `e5` → `e5`)."""
    return method_key(declared) if declared else None


def _setting_matches(setting: str, declared: Any, recorded: Any) -> bool:
    """Whether a declared setting is what a run recorded. The corpus is compared by content: a declared known corpus
    (`wiki-18`) must be the corpus the run's index counted and hashed; a declared custom name stands for any corpus
    that is not a known one (the site shows it by passage count and hash, never by that name)."""
    if setting == "method":
        return recorded is not None and method_key(declared) == method_key(recorded)
    if setting == "retriever":
        return (not recorded) if declared is None else method_key(declared) in recorded
    if setting == "corpus":
        if declared is None or recorded is None:
            return declared is None and recorded is None
        known = {c.key for c in KNOWN_CORPORA}
        wanted = corpus_key(declared)
        return recorded.key == wanted if wanted in known else recorded.key is None
    return declared == recorded


def _shown_setting(setting: str, recorded: Any, run: RunSetting) -> Any:
    if setting == "corpus":
        return recorded.label() if recorded is not None else None
    if setting == "retriever":
        return run.retriever.label()
    return recorded


def manifest_setting(manifest: Manifest) -> dict[str, Any]:
    """The setting a run manifest records, spelled as a submission declares it (`evalsuite submit`'s defaults): a
    known corpus by its label, a custom one by its file name (shown by content on the site either way)."""
    run = RunSetting.from_manifest(manifest)
    corpus = run.corpus.known() if run.corpus is not None else None
    keys = run.retriever.keys()
    retriever = next((k for k in ("e5", *sorted(keys)) if k in keys), None)
    return {
        "corpus": corpus.label if corpus else (run.corpus.name if run.corpus else None),
        "topk": manifest.topk,
        "max_turns": manifest.max_turns,
        "retriever": retriever,
    }


def declared_values(info: SubmissionInfo) -> dict[str, Any]:
    """The setting a submission declares, by the names of `SETTINGS`: the method in `info.method`, the rest in
    `info.setting`."""
    return {name: info.method if name == "method" else getattr(info.setting, name) for name in SETTINGS}


def check_settings(info: SubmissionInfo, report: VerificationReport) -> None:
    """Every declared setting must be what every run manifest records; one entry is one model. Settings that
    imported runs do not record are listed in `report.settings` as declared only."""
    declared = declared_values(info)
    unrecorded: dict[str, list[str]] = defaultdict(list)
    for name, manifest in sorted(report.manifests.items()):
        recorded = recorded_settings(manifest)
        for setting in SETTINGS:
            if setting not in recorded:
                unrecorded[setting].append(name)
            elif not _setting_matches(setting, declared[setting], recorded[setting]):
                shown = _shown_setting(setting, recorded[setting], RunSetting.from_manifest(manifest))
                report.add(
                    "setting",
                    f"{RUNS_DIR}/{name}/{MANIFEST_FILE}",
                    f"submission.json declares {setting} {declared[setting]!r} but this run recorded {shown!r}",
                )
    for setting in SETTINGS:
        runs = unrecorded.get(setting)
        report.settings[setting] = (
            f"declared: not stated by the manifest of {', '.join(runs)}" if runs else CONSISTENT_SETTING
        )
    models = {
        name: m.model.sha256 or m.model.model_hash or m.model.spec
        for name, m in report.manifests.items()
        if m.model.model_dump()
    }
    if len(set(models.values())) > 1:
        listed = "; ".join(f"{name}: {value}" for name, value in sorted(models.items()))
        report.add(
            "setting", SUBMISSION_FILE, f"the runs evaluated different models ({listed}); one entry is one model"
        )


def paper_setting_check(
    info: SubmissionInfo, runs: list[RunRef], manifests: dict[str, Manifest], checked: dict[str, str] | None = None
) -> PaperCheck | None:
    """The declared setting (held to the run manifests by `check_settings`) and the declared task splits against
    the declared method's paper evaluation setting; None for a method without one (a baseline). A top-k or turn
    limit the submission does not declare counts as a difference: "paper setting" means every item was checked, and
    settings that `checked` (report.settings) says are declared only are named in the result."""
    method = method_key(info.method)
    if method not in PAPERS:
        return None
    setting = info.setting
    splits = {task: split for ref in runs for task, split in ref.tasks.items()}
    recorded = [recorded_settings(m).get("retriever", set()) for m in manifests.values()]
    retrievers = setting_names(setting.retriever).union(*recorded)
    paper = {v.name: v.value for v in evaluation_setting(method)}
    undeclared = [
        f"{name}: not declared (paper {paper[name]})"
        for name in names_for(Use.PAPER_LIMIT)
        if getattr(setting, name) is None
    ]
    differences = run_differences(
        method,
        list(splits),
        setting.topk,
        setting.max_turns,
        splits=splits,
        retriever=retrievers,
        corpus=corpus_key(setting.corpus),
    )
    declared_only = tuple(
        name for name, how in (checked or {}).items() if how != CONSISTENT_SETTING and name in Setting.model_fields
    )
    return PaperCheck(method, tuple(differences + undeclared), declared_only)


def paper_note(check: PaperCheck) -> str:
    """A leaderboard entry's paper check in one line. A match is always "as claimed": the setting is the
    submitter's (at best consistent with their manifests), so the note never reads as a checked "paper setting"."""
    if not check.matches:
        return check.summary()
    if check.declared_only:
        return (
            "paper setting as claimed (declared; not stated by the manifests: " + ", ".join(check.declared_only) + ")"
        )
    return "paper setting as claimed (consistent with the manifests)"
