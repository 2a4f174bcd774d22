"""An evalsuite run reads its answers from the model's own text, and verification reads them the same way.

Search-R1's invalid-action message says "...between <answer> and </answer>...": read over the whole response, a
rollout that never answered would predict "and" and count as answered. Imported outputs keep their writers'
convention (the whole response); that they still rescore exactly is tests/foundation/test_score_cli.py's.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.metrics.answer import extract_answer
from evalsuite.protocol.search_r1 import INVALID_ACTION
from evalsuite.runs import ExampleRecord, RunDirectory, summarize
from evalsuite.scoring import score_record

from leaderboard_support import BASE_SEED1, cli

NEVER_ANSWERS = "I am not sure." + INVALID_ACTION + "Still not sure."


def records_of(sub: Path, run: str) -> list[ExampleRecord]:
    text = gzip.decompress((sub / "runs" / run / "predictions.jsonl.gz").read_bytes()).decode()
    return [ExampleRecord.model_validate_json(line) for line in text.splitlines()]


def forge(sub: Path, run: str, records: list[ExampleRecord]) -> None:
    """Write records rescored with the answer metrics, their summary and fresh checksums."""
    for record in records:
        record.metrics = score_record(record)
    (sub / "runs" / run / "predictions.jsonl.gz").write_bytes(gzip.compress("".join(r.model_dump_json() + "\n" for r in records).encode()))
    (sub / "runs" / run / "metrics.json").write_text(summarize(records).model_dump_json(indent=2))
    write_checksums(sub)


def answerless_run(tmp_path: Path, trajectories_dir: Path, benchmarks_dir: Path) -> Path:
    """A replay run of the recorded Bamboogle trajectories in which the first five questions never answer: their
    model turns take no valid action, so each gets the invalid-action message."""
    items = json.loads((trajectories_dir / f"{BASE_SEED1}.json").read_text())
    for item in items[:5]:
        item["output"]["final_response"] = NEVER_ANSWERS
    recording = tmp_path / "recording.json"
    recording.write_text(json.dumps(items))
    out = tmp_path / "run"
    result = cli("run", "--backend", "replay", "--model", recording, "--retriever", "replay", "--tasks", "bamboogle",
                 "--data-dir", benchmarks_dir, "-o", out)
    assert result.exit_code == 0, result.output
    return out


def test_an_answerless_run_predicts_none_and_its_submission_verifies(tmp_path, trajectories_dir, benchmarks_dir):
    run = answerless_run(tmp_path, trajectories_dir, benchmarks_dir)
    records = RunDirectory(run).read_predictions()
    assert len(records) == 125
    for record in records[:5]:
        assert "<answer> and </answer>" in record.trajectory and record.turns[0].invalid_action
        assert extract_answer(record.trajectory) == "and"  # what the whole response would have predicted
        assert record.prediction is None and record.metrics["has_answer"] == 0.0
    assert all(r.prediction is not None for r in records[5:])  # the recorded trajectories all answer

    sub = tmp_path / "submission"
    result = cli("submit", run, "-o", sub, "--name", "answerless replay", "--method", "Search-R1", "--model", "replay")
    assert result.exit_code == 0, result.output
    report = verify_submission(sub, benchmarks_dir)
    assert report.accepted, [str(p) for p in report.problems]
    verified = report.tasks["bamboogle"].records
    assert [r.prediction for r in verified[:5]] == [None] * 5

    # The old reading ("and" from the message) is not what the model's text says: refused.
    records = records_of(sub, "run")
    records[0].prediction = "and"
    forge(sub, "run", records)
    report = verify_submission(sub, benchmarks_dir)
    assert [p.where for p in report.problems if p.check == "prediction"] == ["runs/run/predictions.jsonl.gz:1"]

    # Turns that are not the trajectory's own pieces cannot say what the model wrote: refused, in one line.
    records = records_of(sub, "run")
    records[0].prediction = None
    records[5].turns[-1].text += "<answer> forged </answer>"
    records[5].prediction = "forged"
    forge(sub, "run", records)
    report = verify_submission(sub, benchmarks_dir)
    (problem,) = [p for p in report.problems if p.check == "prediction"]
    assert problem.where == "runs/run/predictions.jsonl.gz:6" and "is not its model segment" in problem.message


def test_an_imported_run_keeps_its_writers_convention(submission, benchmarks_dir):
    # An imported output's prediction is read over its whole response, as Search-R1 recorded it: a record whose
    # response holds the message and no answer predicts "and" there, and is verified so.
    records = records_of(submission, BASE_SEED1)
    records[0].trajectory, records[0].turns[0].text = NEVER_ANSWERS, "I am not sure."
    records[0].turns = records[0].turns[:1]
    records[0].prediction = "and"
    forge(submission, BASE_SEED1, records)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, [str(p) for p in report.problems]
