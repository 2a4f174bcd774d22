"""`evalsuite leaderboard verify`: accept a submission only if every score recomputes from its trajectories.

Every prediction must be what the method's own parser reads from the recorded trajectory (an evalsuite
run's: from the model's turns within it, observations left out, as the rollout loop reads it); scores are
recomputed against the task registry's gold answers (never the submission's own), exactly the metrics each
run records it was scored with, at the definition versions it records (metrics registered later are
computed for the site, never held against an entry); every declared task split must be a registered split
name, covered id for id; the declared setting (method, corpus, retriever, top-k, turns) must be what every
run manifest records; and the submission may hold only the files its format defines, each matching its
checksum, UTF-8 and within the size limits. docs/guarantees.md says what this proves and what it cannot.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

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
from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.leaderboard.submission import (
    CHECKSUMS_FILE,
    FORMAT_VERSION,
    PREDICTIONS_GZ,
    RUNS_DIR,
    SUBMISSION_FILE,
    SUBSET_MARK,
    RunRef,
    Setting,
    SubmissionFile,
    SubmissionInfo,
    VERIFICATION_FILE,
    defined_directory,
    defined_file,
    entry_kind,
    opened_submission,
    parse_checksums,
    registered_splits,
    sha256_file,
    split_and_subset,
    split_covers,
    submission_entries,
    with_subset,
)
from evalsuite.metrics import extract_answer
from evalsuite.metrics.judged import JUDGED_METRICS
from evalsuite.metrics.termination import RUN_METRICS, STOP_REASONS
from evalsuite.metrics.registry import get_metric, is_registered, per_sample_name
from evalsuite.protocol.segments import SegmentMismatch, model_pieces
from evalsuite.runs import SCHEMA_VERSION, ExampleRecord, Manifest, MetricsFile, TaskSummary, summarize
from evalsuite.runs.comparable import Use, names_for, settings_for
from evalsuite.runs.run_setting import KNOWN_CORPORA, RunSetting
from evalsuite.runs.schema import (
    LEGACY_METRICS,
    MANIFEST_FILE,
    METRIC_CONVENTION,
    METRICS_FILE,
    PREDICTIONS_FILE,
    manifest_from_json,
)
from evalsuite.scoring import score_record, task_metrics
from evalsuite.tasks.loader import LoadedSplit, load_split
from evalsuite.tasks.registry import get_task
from evalsuite.tasks.rows import TaskRow, normalize_question
from evalsuite.tasks.subset import Subset, apply_subset, ids_hash, parse_subset

TOLERANCE = 1e-9
# Per check and file, how many individual problems are spelled out before the rest are only counted.
SHOWN_PER_CHECK = 10
# Bumped when verification.json gains or changes fields (2: settings checks, predictions re-derived; 3: paper_setting;
# 4: each task's scoring version and metric versions; 5: n_failed per task, proof).
VERIFICATION_FORMAT = 5
# The settings a submission declares and verification holds to every run manifest (runs.comparable).
SETTINGS = names_for(Use.LEADERBOARD)

# The three proof levels (docs/guarantees.md): everything `verify` and the site say about a field is one of these.
RECOMPUTED = "recomputed"  # derived here from the predictions against the registry's gold answers
CONSISTENT = "consistent"  # the submission's own files agree on it: claims that agree, never evidence
DECLARED = "declared"  # the submitter's word in one place
CONSISTENT_LABEL = "consistent (the submission's files agree; claims, not evidence)"
# report.settings' value for a setting that submission.json and every run manifest state alike
CONSISTENT_SETTING = "consistent: submission.json and every run manifest state it alike"

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


@dataclass(frozen=True)
class Limits:
    """Size limits: uncompressed bytes per file, in total, and per predictions line."""

    max_file_bytes: int = 256 << 20
    max_total_bytes: int = 1 << 30
    max_line_bytes: int = 8 << 20
    # Files (tar members) per submission: a submission holds three files per run plus three.
    max_files: int = 1000


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
    _gold: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

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


def _decode(data: bytes, where: str, report: VerificationReport) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add("encoding", where, f"not UTF-8 ({exc.reason} at byte {exc.start})")
        return None


def _read_bounded(path: Path, limits: Limits, where: str, report: VerificationReport) -> bytes | None:
    """The file's bytes, gunzipped when it ends in .gz, refusing anything over the per-file limit and anything that is
    not a regular file (a link is not followed; a FIFO is never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        report.add("format", where, f"cannot read ({exc.strerror})")
        return None
    with os.fdopen(fd, "rb") as raw:
        kind = entry_kind(os.fstat(raw.fileno()).st_mode)
        if kind != "file":
            report.add("format", where, f"is a {kind}; a submission holds regular files only")
            return None
        try:
            handle = gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw
            data = handle.read(limits.max_file_bytes + 1)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            report.add("format", where, f"cannot read ({exc})")
            return None
    if len(data) > limits.max_file_bytes:
        report.add("oversized", where, f"more than {limits.max_file_bytes} bytes (uncompressed)")
        return None
    return data


def _load_model(path: Path, model: type[BaseModel], limits: Limits, where: str, report: VerificationReport) -> Any:
    if not path.is_file():
        report.add("schema", where, "missing")
        return None
    data = _read_bounded(path, limits, where, report)
    text = None if data is None else _decode(data, where, report)
    if text is None:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        report.add("schema", f"{where}:{exc.lineno}", f"invalid JSON ({exc.msg})")
        return None
    if model is Manifest:  # the one manifest reader: version 1 migrated, anything else one problem line
        try:
            return manifest_from_json(obj, where)
        except DataError as exc:
            report.add("schema", where, exc.message.removeprefix(f"{where}: "))
            return None
    if model is not SubmissionFile and isinstance(obj, dict) and obj.get("schema_version") != SCHEMA_VERSION:
        report.add("schema", where, f"schema_version {obj.get('schema_version')!r} is not {SCHEMA_VERSION}")
        return None
    if (
        model is SubmissionFile
        and isinstance(obj, dict)
        and obj.get("format_version", FORMAT_VERSION) != FORMAT_VERSION
    ):
        report.add(
            "format-version",
            where,
            f"format_version {obj.get('format_version')!r} is not one this evalsuite "
            f"reads ({FORMAT_VERSION}); repack with this version's `evalsuite submit`",
        )
        return None
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        for error in exc.errors()[:SHOWN_PER_CHECK]:
            report.add("schema", where, f"{'.'.join(map(str, error['loc'])) or '(top level)'}: {error['msg']}")
        return None


def check_files(root: Path, limits: Limits, report: VerificationReport, runs: set[str] | None) -> None:
    """Only the files the format defines (for the declared `runs`), checksums of every one, no links, no unlisted
    or missing files, and the file-count and total size limits."""
    # Every entry is looked at, links not followed: only regular files and the folders the format defines pass.
    entries = submission_entries(root, 2 * limits.max_files + 2)
    if entries is None:
        report.add("oversized", ".", f"more than {2 * limits.max_files + 2} files and folders, over the limit")
        return
    # an undeclared folder is named when nothing in it is (its files are refused each in their own line)
    named = {
        "/".join(rel.split("/")[:depth])
        for rel, kind in entries.items()
        if kind != "directory"
        for depth in range(1, rel.count("/") + 1)
    }
    for rel, kind in entries.items():
        if kind == "directory" and not defined_directory(rel, runs) and rel not in named:
            report.add(
                "unexpected-file",
                rel,
                "a folder the submission format does not define (it holds runs/ and one folder per declared run)",
            )
        elif kind not in ("file", "directory"):
            report.add("format", rel, f"is a {kind}; a submission holds regular files only")
    files = [rel for rel, kind in entries.items() if kind == "file" and rel not in (CHECKSUMS_FILE, VERIFICATION_FILE)]
    present = {rel for rel, kind in entries.items() if kind != "directory"}
    report.n_files = len(files)
    if len(files) > limits.max_files:
        report.add("oversized", ".", f"{len(files)} files, over the limit of {limits.max_files}")
        return
    total = 0
    for rel in files:
        path = root / rel
        if not defined_file(rel, runs):
            report.add(
                "unexpected-file",
                rel,
                "not a file of the submission format (submission.json, checksums.sha256 "
                "and each declared run's manifest.json, metrics.json and predictions)",
            )
            continue
        size = path.stat().st_size
        total += size
        if size > limits.max_file_bytes:
            report.add("oversized", rel, f"{size} bytes, over the limit of {limits.max_file_bytes}")
    if total > limits.max_total_bytes:
        report.add("oversized", ".", f"{total} bytes in all, over the limit of {limits.max_total_bytes}")
    if entries.get(CHECKSUMS_FILE) != "file":
        if CHECKSUMS_FILE not in entries:
            report.add("checksum", CHECKSUMS_FILE, "missing; every file must be listed with its sha256")
        return
    data = _read_bounded(root / CHECKSUMS_FILE, limits, CHECKSUMS_FILE, report)
    text = None if data is None else _decode(data, CHECKSUMS_FILE, report)
    if text is None:
        return
    try:
        listed = parse_checksums(text, CHECKSUMS_FILE)
    except EvalsuiteError as exc:
        report.add("checksum", CHECKSUMS_FILE, exc.message)
        return
    for rel in files:
        if not defined_file(rel, runs):
            continue  # already refused above
        if rel not in listed:
            report.add("checksum", rel, f"present but not listed in {CHECKSUMS_FILE}")
        elif sha256_file(root / rel) != listed[rel]:
            report.add(
                "checksum",
                rel,
                f"sha256 {sha256_file(root / rel)[:16]}… does not match {CHECKSUMS_FILE} ({listed[rel][:16]}…)",
            )
    for rel in sorted(set(listed) - present):
        report.add("checksum", rel, f"listed in {CHECKSUMS_FILE} but missing")


def read_records(
    run_dir: Path, where: str, limits: Limits, report: VerificationReport
) -> list[tuple[int, ExampleRecord]] | None:
    """(line number, record) for each predictions line; every bad line is a problem naming file:line.

    None when the file itself cannot be read (missing, oversized, not UTF-8): that one problem is reported.
    """
    candidates = [run_dir / PREDICTIONS_GZ, run_dir / PREDICTIONS_FILE]
    present = [p for p in candidates if p.is_file()]
    if len(present) != 1:
        report.add(
            "schema", where, f"needs exactly one of {PREDICTIONS_GZ} or {PREDICTIONS_FILE}, found {len(present)}"
        )
        return None
    path = present[0]
    where = f"{where}/{path.name}"
    data = _read_bounded(path, limits, where, report)
    text = None if data is None else _decode(data, where, report)
    if text is None:
        return None
    records: list[tuple[int, ExampleRecord]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        at = f"{where}:{lineno}"
        if len(line.encode("utf-8")) > limits.max_line_bytes:
            report.add("oversized", at, f"line over {limits.max_line_bytes} bytes")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            report.add("schema", at, f"invalid JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict) or obj.get("schema_version") != SCHEMA_VERSION:
            report.add("schema", at, f"not an example record of schema_version {SCHEMA_VERSION}")
            continue
        try:
            records.append((lineno, ExampleRecord.model_validate(obj)))
        except ValidationError as exc:
            error = exc.errors()[0]
            report.add("schema", at, f"{'.'.join(map(str, error['loc']))}: {error['msg']}")
    return records


def _preview(ids: set[str], n: int = 5) -> str:
    shown = sorted(ids)[:n]
    return ", ".join(shown) + (f" and {len(ids) - n} more" if len(ids) > n else "")


def check_ids(
    lines: list[tuple[int, ExampleRecord]], gold: dict[str, TaskRow], where: str, label: str, report: VerificationReport
) -> list[tuple[int, ExampleRecord]]:
    """Each gold id exactly once and nothing extra (a sampled, multi-seed run: once per sample, every question with
    all K samples); returns the first occurrence of each known (id, sample)."""
    first: dict[tuple[str, int | None], int] = {}
    kept: list[tuple[int, ExampleRecord]] = []
    for lineno, record in lines:
        key = (record.id, record.sample)
        if key in first:
            sample = "" if record.sample is None else f" sample {record.sample}"
            report.add(
                "duplicate-id",
                f"{where}:{lineno}",
                f"{label}: id {record.id!r}{sample} appears again (first at line {first[key]})",
            )
            continue
        first[key] = lineno
        if record.id in gold:
            kept.append((lineno, record))
    seen = {i for i, _ in first}
    missing = set(gold) - seen
    extra = seen - set(gold)
    if missing:
        report.add(
            "missing-id", where, f"{label}: {len(missing)} of the split's {len(gold)} ids missing: {_preview(missing)}"
        )
    if extra:
        report.add("extra-id", where, f"{label}: {len(extra)} ids not in the split: {_preview(extra)}")
    return kept if _check_samples(first, where, label, report) else []


def _check_samples(
    first: dict[tuple[str, int | None], int], where: str, label: str, report: VerificationReport
) -> bool:
    """A sampled run's records: none greedy (else False: nothing of the task can be summarized), and every question
    with samples 0..K−1 (K: the most samples any question holds, so no index a line claims sizes anything)."""
    samples = {s for _, s in first}
    if samples <= {None}:  # a greedy run, or no records (the ids check reports those missing)
        return True
    if None in samples:
        report.add(
            "schema",
            where,
            f"{label}: mixes sampled records and records with no sample index; a run is one or the other",
        )
        return False
    by_id: dict[str, set[int]] = defaultdict(set)
    for i, s in first:
        by_id[i].add(s)  # type: ignore[arg-type]
    # K is bounded by the records themselves (a question's samples are 0..K−1, so no index reaches its count), never
    # by an index a line claims: an index of 10**12 is refused here, before anything is sized by it
    k = max(len(got) for got in by_id.values())
    out_of_range = sorted({s for got in by_id.values() for s in got if not 0 <= s < k})
    if out_of_range:
        report.add(
            "sample",
            where,
            f"{label}: sample index {out_of_range[0]} is out of range: the records hold at most {k} samples "
            f"of a question, numbered 0..{k - 1}",
        )
        return False
    short = {i for i, got in by_id.items() if len(got) != k}
    if short:
        report.add(
            "missing-sample",
            where,
            f"{label}: {len(short)} questions lack some of the run's {k} samples: {_preview(short)}",
        )
    return True


def _format(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.6g}"


def prediction_parser(method: str | None) -> Callable[[str], str | None]:
    """How verification reads a prediction from a trajectory: the registered method's own answer parser, or
    Search-R1's `evalsuite.metrics.extract_answer` for imported outputs that name no method. Verification parses
    answers here and nowhere else, so it follows the methods' parsers as they change."""
    if method is None:
        return extract_answer
    from evalsuite.agent.method import get_method

    return get_method(method).extract_answer


def parsing_method(manifest: Manifest | None, declared: str) -> str | None:
    """The method whose parser reads this run's trajectories: the manifest's, else the declared one when it is
    registered, else None (Search-R1-style imported outputs)."""
    from evalsuite.agent.method import list_methods

    if manifest is not None and manifest.method:
        return manifest.method
    return method_key(declared) if method_key(declared) in list_methods() else None


def reads_model_text(manifest: Manifest | None) -> bool:
    """Whether a run's answers are read from the model's own text (an evalsuite run: the rollout loop reads them so,
    `agent.engine.model_text`) rather than from the whole trajectory (imported outputs: their writers' convention,
    under which an observation's `<answer>` tags count)."""
    return manifest is not None and manifest.kind == "run"


def model_text_reader(method: str | None) -> Callable[[ExampleRecord], str]:
    """How verification reads the model's own text of an evalsuite run's record: its model segments (in a record
    written before segments existed, re-derived from its turns with the observations located strictly), each checked
    to be one of its turns with the searches and answer its text says (`evalsuite.protocol.segments`). Raises
    `SegmentMismatch` for a record whose turns cannot be shown to be the model's own text."""
    from evalsuite.agent.method import get_method

    read = get_method(method or "search-r1")
    invalid, observation = read.invalid_observation(), read.response_protocol().observation

    def model_text(record: ExampleRecord) -> str:
        turns, segments = record.turns, record.segments
        return "".join(model_pieces(record.trajectory, segments, turns, read.parse_action, invalid, observation))

    return model_text


def check_record(
    lineno: int,
    record: ExampleRecord,
    split: str,
    ref: RunRef,
    parse: Callable[[str], str | None],
    where: str,
    report: VerificationReport,
    model_text: Callable[[ExampleRecord], str] | None = None,
) -> ExampleRecord:
    """Check what a record claims about itself (split, status, trajectory) and return it with the prediction its
    method's parser reads from the trajectory, which is what gets scored (`model_text`: from the model's own text
    within it, as an evalsuite run reads it: `model_text_reader`)."""
    at = f"{where}:{lineno}"
    if not split_covers(split, record.split):
        report.add(
            "split", at, f"id {record.id!r}: claims split {record.split!r}, but submission.json declares {split!r}"
        )
    failed = record.status == "failed"
    if failed and not ref.includes_failed:
        report.add(
            "failed",
            at,
            f"id {record.id!r}: marked failed ({(record.error or 'no reason given')[:80]}); finish the run "
            "with `evalsuite run --resume`, or declare its failures with `evalsuite submit --include-failed`",
        )
    if not failed and not record.turns:
        report.add(
            "empty-trajectory",
            at,
            f"id {record.id!r}: no recorded turns; a prediction counts only as what the model's recorded response says",
        )
    elif not failed and not record.trajectory.strip() and any(turn.text.strip() for turn in record.turns):
        # An empty generation (one turn of no text) is honest; turns with text and no trajectory are not.
        report.add("empty-trajectory", at, f"id {record.id!r}: its turns hold text but its trajectory is empty")
    text: str | None = record.trajectory
    if model_text is not None:
        try:
            text = model_text(record)
        except SegmentMismatch as exc:
            text = None
            report.add(
                "prediction",
                at,
                f"id {record.id!r}: {exc}, so the model's own text (where an evalsuite run reads the answer) "
                "cannot be checked",
            )
    derived = parse(text or "")
    if text is not None and derived != record.prediction:
        report.add(
            "prediction",
            at,
            f"id {record.id!r}: prediction {_clip(record.prediction)} is not what the method's parser "
            f"reads from the trajectory ({_clip(derived)})",
        )
    return record.model_copy(update={"prediction": derived})


def _clip(text: str | None, n: int = 80) -> str:
    return repr(text if text is None or len(text) <= n else text[:n] + "…")


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


def _gold(
    task: str, split: str, data_dir: str | Path | None, root: Path, where: str, report: VerificationReport
) -> tuple[LoadedSplit, int] | None:
    """The registry's rows of a declared task split, and how many questions the whole split holds; the split must
    be a registered name, and the rows never come from inside the submission. A declared subset narrows the rows
    (`loaded.split` names it); one that holds every question of the split is the whole split, and ranked with it."""
    try:
        registered = get_task(task)
    except EvalsuiteError as exc:
        report.add("unknown-task", where, f"{exc.message} ({exc.hint})" if exc.hint else exc.message)
        return None
    allowed = registered_splits(registered)
    whole, subset = split_and_subset(split)
    if whole not in allowed:
        report.add(
            "split",
            where,
            f"{split[:100]!r} is not a registered split of {task}; declare one of: {', '.join(allowed)}"
            f" (optionally with {SUBSET_MARK}first:N or {SUBSET_MARK}sample:N:SEED)",
        )
        return None
    chosen = _declared_subset(subset, split, where, report)
    if chosen is False:
        return None
    loaded = _whole_split(task, whole, data_dir, root, where, report)
    if loaded is None:
        return None
    n_split = len(loaded.rows)
    narrowed = _narrowing(chosen, n_split)
    if narrowed is None:
        return loaded, n_split
    # the subset's ids are rebuilt from the registry's rows, as `evalsuite run --subset` chose them; the split is
    # named in its canonical spelling (`test@first:010` is `test@first:10`): the leaderboard groups columns by it
    canonical = with_subset(whole, str(narrowed))
    return replace(loaded, split=canonical, rows=apply_subset(loaded.rows, narrowed)), n_split


def _whole_split(
    task: str, split: str, data_dir: str | Path | None, root: Path, where: str, report: VerificationReport
) -> LoadedSplit | None:
    if (task, split) in report._gold:
        return report._gold[(task, split)]
    try:
        loaded = load_split(task, split, data_dir)
    except EvalsuiteError as exc:
        report.add(
            "gold",
            where,
            f"cannot load the registry's {task}/{split}: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""),
        )
        return None
    if Path(loaded.source).resolve().is_relative_to(root.resolve()):
        report.add(
            "gold",
            where,
            f"the {task}/{split} gold file resolves inside the submission; gold answers never come from a submission",
        )
        return None
    report._gold[(task, split)] = loaded
    return loaded


def _declared_subset(
    subset: str | None, split: str, where: str, report: VerificationReport
) -> Subset | None | Literal[False]:
    """The subset a declared split names (None: the whole split); False, with the problem reported, when it is not
    a subset `evalsuite run --subset` can choose."""
    if subset is None:
        return None
    try:
        chosen = parse_subset(subset)
    except EvalsuiteError as exc:
        report.add("split", where, f"{split[:100]!r}: {exc.message} ({exc.hint})")
        return False
    if chosen.kind == "full":
        report.add("split", where, f"{split[:100]!r}: a whole split is declared without {SUBSET_MARK}full")
        return False
    return chosen


def _subset_spec(spec: str | None, n_split: int) -> Subset | None:
    """The questions a subset spec chooses of a split of `n_split` (`first:0128` is `first:128`); None for the whole
    split (a subset of at least n_split questions is all of them) and for what is no `--subset` spec (an import's
    `ids:N` counts its records: the ids check is what holds it to the split)."""
    try:
        return _narrowing(parse_subset(spec) if spec else None, n_split)
    except EvalsuiteError:
        return None


def _narrowing(chosen: Subset | None, n_split: int) -> Subset | None:
    """`chosen` when it holds fewer than all `n_split` questions of its split, else None: the whole split."""
    return chosen if chosen is not None and chosen.n is not None and chosen.n < n_split else None


def _manifest_split(
    manifest: Manifest | None,
    task: str,
    declared: str,
    loaded: LoadedSplit,
    n_split: int,
    where: str,
    report: VerificationReport,
) -> None:
    """The declared split (and subset) against what the run's manifest recorded; `loaded`: the declared questions."""
    if manifest is None:
        return
    recorded = manifest.splits.get(task)
    if (recorded is None and manifest.kind == "run") or not split_covers(declared, recorded):
        report.add(
            "split", where, f"{task}: submission.json declares split {declared!r} but the manifest records {recorded!r}"
        )
    _, subset = split_and_subset(loaded.split)
    ran = _subset_spec(manifest.subset, n_split)
    if manifest.kind == "run" and _subset_spec(subset, n_split) != ran:
        report.add(
            "split",
            where,
            f"{task}: submission.json declares split {declared!r} but the run evaluated subset "
            f"{manifest.subset or 'full'} (declare {with_subset(recorded or declared, str(ran) if ran else None)!r})",
        )
    recorded_ids = manifest.subset_ids_hash.get(task)
    if subset and recorded_ids and recorded_ids != ids_hash([row.id for row in loaded.rows]):
        report.add(
            "split",
            where,
            f"{task}: the manifest's ids of subset {subset} are not the registry's {loaded.split} "
            "(the run read other data than the registry's split)",
        )


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
    manifest = _load_model(run_dir / MANIFEST_FILE, Manifest, limits, f"{where}/{MANIFEST_FILE}", report)
    claimed = _load_model(run_dir / METRICS_FILE, MetricsFile, limits, f"{where}/{METRICS_FILE}", report)
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
        found = _gold(task, split, data_dir, root, declared_at, report)
        if found is None:
            continue
        loaded, n_split = found
        _manifest_split(manifest, task, split, loaded, n_split, f"{where}/{MANIFEST_FILE}", report)
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


def declared_setting(info: SubmissionInfo) -> dict[str, Any]:
    """The setting a submission declares, by the names of `SETTINGS`: the method in `info.method`, the rest in
    `info.setting`."""
    return {name: info.method if name == "method" else getattr(info.setting, name) for name in SETTINGS}


def check_settings(info: SubmissionInfo, report: VerificationReport) -> None:
    """Every declared setting must be what every run manifest records; one entry is one model. Settings that
    imported runs do not record are listed in `report.settings` as declared only."""
    declared = declared_setting(info)
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


def verify_submission(
    path: str | Path, data_dir: str | Path | None = None, limits: Limits | None = None
) -> VerificationReport:
    """Verify a submission directory or tarball; the report lists every problem and the recomputed scores."""
    limits = limits or Limits()
    report = VerificationReport(submission=str(path))
    with opened_submission(Path(path), limits.max_total_bytes, limits.max_files) as root:
        meta = _load_model(root / SUBMISSION_FILE, SubmissionFile, limits, SUBMISSION_FILE, report)
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
