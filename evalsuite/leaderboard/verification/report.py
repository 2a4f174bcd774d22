"""What verification found: each problem, each rescored task, the settings as checked, and the proof levels
(docs/guarantees.md's three: recomputed, consistent, declared) an entry's badge rests on."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.agent.papers import PaperCheck, method_key
from evalsuite.leaderboard.submission import SubmissionFile, SubmissionInfo
from evalsuite.runs import ExampleRecord, Manifest, TaskSummary
from evalsuite.runs.comparable import Use, settings_for
from evalsuite.runs.run_setting import RunSetting
from evalsuite.runs.schema import METRIC_CONVENTION
from evalsuite.leaderboard.verification.declared_setting import (
    CONSISTENT_SETTING,
    corpus_display,
    paper_note,
    retriever_display,
)


# Per check and file, how many individual problems are spelled out before the rest are only counted.
SHOWN_PER_CHECK = 10
# Bumped when verification.json gains or changes fields (2: settings checks, predictions re-derived; 3: paper_setting;
# 4: each task's scoring version and metric versions; 5: n_failed per task, proof).
VERIFICATION_FORMAT = 5

# The three proof levels (docs/guarantees.md): everything `verify` and the site say about a field is one of these.
RECOMPUTED = "recomputed"  # derived here from the predictions against the registry's gold answers
CONSISTENT = "consistent"  # the submission's own files agree on it: claims that agree, never evidence
DECLARED = "declared"  # the submitter's word in one place
CONSISTENT_LABEL = "consistent (the submission's files agree; claims, not evidence)"

# Which level each field of a submission gets: docs/guarantees.md's field table, row for row
# (tests/leaderboard/test_proof_levels.py reads the table and compares). "consistent or declared": consistent when
# submission.json and every run manifest state the same value, declared when a manifest does not state it.
FIELD_LEVELS: dict[tuple[str, str], str] = {
    ("submission.json", "info.name"): DECLARED,
    ("submission.json", "info.method"): f"{CONSISTENT} or {DECLARED}",
    ("submission.json", "info.model, training_data, compute, paper, contact, description"): DECLARED,
    ("submission.json", "info.setting.corpus, retriever, topk, max_turns"): f"{CONSISTENT} or {DECLARED}",
    ("submission.json", "runs[].tasks"): RECOMPUTED,
    ("submission.json", "runs[].includes_failed"): DECLARED,
    ("manifest.json", "kind"): "never read for a label",
    ("manifest.json", "method, corpus, retriever, topk, max_turns, splits, subset"): CONSISTENT,
    ("manifest.json", "model, backend, decoding, everything else"): DECLARED,
    ("metrics.json", "every number"): RECOMPUTED,
    ("predictions", "id, task, split, question, golden_answers"): RECOMPUTED,
    ("predictions", "prediction, metrics"): RECOMPUTED,
    ("predictions", "trajectory, turns, passages"): DECLARED,
    ("predictions", "status"): DECLARED,
}


@dataclass(frozen=True)
class Problem:
    """One reason to reject: which check failed, where (file[:line]) and what was found."""

    check: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.where}: {self.message}"


@dataclass
class VerifiedTask:
    """A task split whose examples were rescored against the registry: records carry the recomputed metrics."""

    task: str
    split: str
    run: str
    records: list[ExampleRecord]
    summary: TaskSummary
    data_source: str
    data_sha256: str | None
    # The metrics whose claims were compared with the recomputation and matched, by definition version: a report of
    # that check, never a number. Every number shown (records, summary) is the task's own metrics recomputed from
    # the predictions against the registry's golds, whatever the claims name.
    verified_metrics: dict[str, int] = field(default_factory=dict)


@dataclass
class VerificationReport:
    """Everything verification found; `accepted` only when there is no problem at all."""

    submission: str
    meta: SubmissionFile | None = None
    manifests: dict[str, Manifest] = field(default_factory=dict)
    tasks: dict[str, VerifiedTask] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    omitted: Counter = field(default_factory=Counter)
    n_files: int = 0
    # setting → how it was checked ("matches every run manifest", or which runs do not record it).
    settings: dict[str, str] = field(default_factory=dict)
    # The declared setting against the method's paper evaluation setting (None: the method has no paper setting).
    paper_setting: PaperCheck | None = None
    _shown: Counter = field(default_factory=Counter, repr=False)
    # The registry's rows of each (task, split), loaded once per verification: a submission that declares one split
    # in many runs costs one load of it, so verification stays linear in the submission's records.
    loaded_splits: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    @property
    def accepted(self) -> bool:
        return not self.problems and self.meta is not None and bool(self.tasks)

    @property
    def info(self) -> SubmissionInfo | None:
        return self.meta.info if self.meta else None

    def add(self, check: str, where: str, message: str) -> None:
        key = (check, where.split(":")[0])
        if self._shown[key] >= SHOWN_PER_CHECK:
            self.omitted[key] += 1
            return
        self._shown[key] += 1
        self.problems.append(Problem(check, where, message))

    def proof(self) -> dict[str, list[str]]:
        """What this entry's badge rests on, by docs/guarantees.md's three levels (`FIELD_LEVELS`): `recomputed`
        (derived here from the predictions against the registry's gold answers), `consistent` (claims the
        submission's own files agree on: submission.json and every run manifest state the same value) and
        `declared` (the submitter's word in one place). A manifest is a file the submitter writes, so agreement with
        it is never evidence, and no label reads any field the submitter may delete (a manifest's `kind`). The site
        shows these next to every badge."""
        failed = sum(t.summary.n_failed for t in self.tasks.values())
        recomputed = [
            "scores from the predictions against the registry's gold answers",
            "every id of each declared split (and subset), questions and gold answers as the registry's",
        ]
        if failed:
            recomputed.append(f"{failed} failed record{'s' if failed != 1 else ''} scored 0")
        consistent: list[str] = []
        declared: list[str] = []
        for setting in settings_for(Use.LEADERBOARD):
            name, label = setting.name, setting.label
            if name == "method" and not self.method_registered():
                declared.append(f"{label} (not registered here: answers read with Search-R1's parser)")
                continue
            if self.settings.get(name) != CONSISTENT_SETTING:
                declared.append(label)
            else:
                consistent.append(self._corpus_basis() if name == "corpus" else label)
        declared += ["model", "training data"]
        return {RECOMPUTED: recomputed, CONSISTENT: consistent, DECLARED: declared}

    def _corpus_basis(self) -> str:
        """ "corpus" when the manifests' corpus is a known one matched by passage count and sha256 (or a custom one);
        "corpus (wiki-18 by passage count only)" when a known corpus was matched on the count alone."""
        matched = [RunSetting.from_manifest(m).corpus for m in self.manifests.values()]
        known = [c.known() for c in matched if c is not None]
        count_only = sorted({k.label for k in known if k is not None and k.sha256 is None})
        return f"corpus ({', '.join(count_only)} by passage count only)" if count_only else "corpus"

    def method_registered(self) -> bool:
        """Whether the declared method is one registered here (its parser reads the trajectories)."""
        from evalsuite.agent.method import list_methods

        return self.meta is not None and method_key(self.meta.info.method) in list_methods()

    def setting_key(self) -> str:
        """The key entries are grouped and ranked by: the *declared* setting, spelled canonically (a known corpus
        by its label, any other as "custom corpus (NAME)"; the retriever case-folded). It reads no manifest: the
        setting is a claim whatever the manifests say (`proof` says which parts the files agree on), so nothing a
        submitter writes in a manifest, or deletes from one, moves an entry to another table."""
        assert self.meta is not None
        setting = self.meta.info.setting
        return setting.model_copy(
            update={"corpus": corpus_display(setting.corpus), "retriever": retriever_display(setting.retriever)}
        ).key()

    def method_label(self) -> str:
        """The declared method as the site shows it: "NAME (declared; not registered here)" when no registered
        method is called so (its answers were read with Search-R1's parser), else its name."""
        assert self.meta is not None
        method = self.meta.info.method
        return method if self.method_registered() else f"{method} (declared; not registered here)"

    def paper_note(self) -> str:
        """The paper check as the site and `verify` show it (`paper_note`); "" for a method without one."""
        return paper_note(self.paper_setting) if self.paper_setting is not None else ""

    def proof_line(self) -> str:
        """`proof()` in one line: "recomputed: scores, splits · consistent (…): … · declared: …"."""
        proof = self.proof()
        parts = ["recomputed: scores, splits" + "".join(f", {p}" for p in proof[RECOMPUTED][2:])]
        if proof[CONSISTENT]:
            parts.append(f"{CONSISTENT_LABEL}: " + ", ".join(proof[CONSISTENT]))
        parts.append("declared: " + ", ".join(proof[DECLARED]))
        return " · ".join(parts)

    def problem_lines(self) -> list[str]:
        lines = [str(p) for p in self.problems]
        lines += [
            f"[{check}] {where}: … and {n} more of the same" for (check, where), n in sorted(self.omitted.items())
        ]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: verdict, problems and the recomputed per-task scores."""
        return {
            "verification_format": VERIFICATION_FORMAT,
            "submission": self.submission,
            "accepted": self.accepted,
            "problems": self.problem_lines(),
            "info": self.meta.info.model_dump() if self.meta else None,
            "settings": self.settings,
            "paper_setting": self.paper_setting.to_dict() if self.paper_setting else None,
            "proof": self.proof() if self.accepted else None,
            "tasks": {
                name: {
                    "split": t.split,
                    "run": t.run,
                    "n": t.summary.n,
                    "n_failed": t.summary.n_failed,
                    "data_source": Path(t.data_source).name,
                    "data_sha256": t.data_sha256,
                    "metric_convention": METRIC_CONVENTION,
                    "metric_versions": t.verified_metrics,
                    "metrics": {m: s.model_dump() for m, s in t.summary.metrics.items()},
                }
                for name, t in self.tasks.items()
            },
        }
