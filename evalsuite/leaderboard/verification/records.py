"""Each record against its declared split: every id once (every sample of a sampled run), the split and status it
claims, and its prediction as the method's own parser reads it from the recorded trajectory."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from evalsuite.agent.papers import method_key
from evalsuite.leaderboard.submission import RunRef, split_covers
from evalsuite.metrics import extract_answer
from evalsuite.protocol.segments import SegmentMismatch, model_pieces
from evalsuite.runs import ExampleRecord, Manifest
from evalsuite.tasks.rows import TaskRow
from evalsuite.leaderboard.verification.report import VerificationReport


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
