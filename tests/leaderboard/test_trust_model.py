"""Issue 26's attacks on "verified": each put a forged number on the site or in `evalsuite table` at d5cf7d1.

Every forger here re-signs (fresh checksums) and writes claims that agree with themselves, so only what
verification recomputes from the primary data can stop them.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.metrics import extract_answer
from evalsuite.runs import ExampleRecord, summarize
from evalsuite.scoring import score_record

from test_leaderboard_integrity import PREDICTIONS, RUN, edit_json, read_records

def write_records(sub: Path, records: list[ExampleRecord]) -> None:
    (sub / PREDICTIONS).write_bytes(gzip.compress("".join(r.model_dump_json() + "\n" for r in records).encode()))


def gold_answers_marked_failed(sub: Path) -> list[ExampleRecord]:
    """The attack of issue 26: every record failed, turns emptied, the trajectory and prediction the gold answer."""
    records = read_records(sub)
    for record in records:
        gold = record.golden_answers[0]
        record.status, record.error = "failed", "timeout"
        record.turns, record.trajectory = [], f"<answer>{gold}</answer>"
        record.prediction = extract_answer(record.trajectory)  # what Search-R1's parser reads: the gold answer
    edit_json(sub / "submission.json", lambda m: m["runs"][0].update(includes_failed=True))
    return records


def test_failed_records_forged_with_gold_answers_score_zero_not_one_hundred(submission, benchmarks_dir):
    records = gold_answers_marked_failed(submission)
    # The forger claims what an answer-tag parser reads from the trajectory: every answer right.
    for record in records:
        record.metrics = {"em": 1.0, "cover_em": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0, "retrieval_hit": 0.0,
                          "n_searches": 0.0, "n_turns": 0.0, "n_invalid": 0.0, "has_answer": 1.0}
    write_records(submission, records)
    claimed = summarize([r.model_copy(update={"status": "ok"}) for r in records])
    (submission / RUN / "metrics.json").write_text(claimed.model_dump_json(indent=2))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert not report.accepted
    first = next(p for p in report.problems if p.check == "score")
    assert first.message == "id 'test_0': claimed cover_em 1 but recomputed 0 against the registry's gold answers"


def test_failed_records_count_zero_on_every_metric_and_are_counted(submission, benchmarks_dir):
    records = gold_answers_marked_failed(submission)
    # The forger's metrics are whatever the scorer gives; a failed record is worth 0 on every metric.
    for record in records:
        record.metrics = score_record(record)
    assert records[0].metrics["em"] == 0.0 and records[0].metrics["has_answer"] == 0.0
    write_records(submission, records)
    (submission / RUN / "metrics.json").write_text(summarize(records).model_dump_json(indent=2))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    summary = report.tasks["bamboogle"].summary
    assert summary.n == 125 and summary.n_failed == 125
    assert {name: s.mean for name, s in summary.metrics.items() if s.mean != 0.0} == {}
    assert report.to_dict()["tasks"]["bamboogle"]["n_failed"] == 125


def test_a_failed_record_carrying_scores_counts_zero_in_the_summary():
    ok = ExampleRecord(id="a", task="nq", question="q", golden_answers=["x"], prediction="x", metrics={"em": 1.0})
    failed = ExampleRecord(id="b", task="nq", question="q", golden_answers=["x"], prediction="x", metrics={"em": 1.0},
                           status="failed")
    summary = summarize([ok, failed]).tasks["nq"]
    assert summary.metrics["em"].mean == 0.5 and summary.n_failed == 1
