"""Attacks on verification (issue 15, items 1-3 and 5): each one put a forged score on the site as verified.

Every cheater here is careful: records are rescored with the real scorer, metrics.json is the real summary of them
and checksums are regenerated, so only the integrity checks themselves can catch the forgery.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard import Limits, verify_submission
from evalsuite.leaderboard.verification.declared_setting import CONSISTENT_SETTING
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.runs import ExampleRecord, summarize
from evalsuite.scoring import score_record

from leaderboard_support import BASE_SEED1, REPO, cli

RUN = f"runs/{BASE_SEED1}"
PREDICTIONS = f"{RUN}/predictions.jsonl.gz"


def read_records(sub: Path) -> list[ExampleRecord]:
    text = gzip.decompress((sub / PREDICTIONS).read_bytes()).decode()
    return [ExampleRecord.model_validate_json(line) for line in text.splitlines()]


def forge(sub: Path, records: list[ExampleRecord]) -> None:
    """Write records rescored honestly, their true summary as metrics.json, and fresh checksums."""
    for record in records:
        record.metrics = score_record(record)
    (sub / PREDICTIONS).write_bytes(gzip.compress("".join(r.model_dump_json() + "\n" for r in records).encode()))
    (sub / RUN / "metrics.json").write_text(summarize(records).model_dump_json(indent=2))
    write_checksums(sub)


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def by_check(report, check: str) -> list:
    return [p for p in report.problems if p.check == check]


# --- 1. Predictions must be the trajectory's ----------------------------------------------------------------

def test_gold_predictions_with_empty_trajectories_are_rejected(submission, benchmarks_dir):
    records = read_records(submission)
    for record in records:
        record.prediction, record.trajectory, record.turns = record.golden_answers[0], "", []
    forge(submission, records)
    report = verify_submission(submission, benchmarks_dir)
    assert not report.accepted
    # Scored as the trajectory says (no answer), the claimed scores do not recompute either.
    assert {p.check for p in report.problems} == {"empty-trajectory", "prediction", "score"}
    first = by_check(report, "prediction")[0]
    assert first.where == f"{PREDICTIONS}:1"
    assert first.message == (f"id 'test_0': prediction {records[0].golden_answers[0]!r} is not what the method's parser "
                             "reads from the trajectory (None)")
    assert by_check(report, "empty-trajectory")[0].message.startswith("id 'test_0': no recorded turns")
    # 125 bad records of each kind: ten are spelled out, the rest counted.
    assert report.omitted[("prediction", PREDICTIONS)] == 115


def test_turns_with_text_under_an_emptied_trajectory_are_rejected(submission, benchmarks_dir):
    records = read_records(submission)
    records[6].trajectory = ""  # the turns keep the model's text; the prediction is re-derived as None
    records[6].prediction = None
    forge(submission, records)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[empty-trajectory] {PREDICTIONS}:7: id 'test_6': its turns hold text but its trajectory is empty"]


def test_prediction_swapped_for_a_gold_string_from_a_retrieved_passage_is_rejected(submission, benchmarks_dir):
    records = read_records(submission)
    swapped = []
    for index, record in enumerate(records):
        gold = next((g for g in record.golden_answers if g in record.trajectory), None)
        if gold is not None and score_record(record)["em"] == 0.0:
            record.prediction = gold  # occurs in a retrieved passage, so a substring check lets it through
            swapped.append(index)
    forge(submission, records)
    assert len(swapped) >= 5
    assert sum(r.metrics["em"] for r in records) > 11  # the forgery raises EM above the honest 11 of 125
    report = verify_submission(submission, benchmarks_dir)
    assert {p.check for p in report.problems} == {"prediction", "score"}
    assert [p.where for p in by_check(report, "prediction")] == [f"{PREDICTIONS}:{i + 1}" for i in swapped][:10]


def test_a_run_naming_an_unregistered_method_is_rejected(submission, benchmarks_dir):
    edit_json(submission / RUN / "manifest.json", lambda m: m.update(method="search-r2"))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[unknown-method] {RUN}/manifest.json: unknown method 'search-r2' (did you mean search-r1, search-p1, search-o1?)",
        f"[setting] {RUN}/manifest.json: submission.json declares method 'Search-R1' but this run recorded 'search-r2'",
    ]


# --- 2. Splits are registry names, not paths ----------------------------------------------------------------

def forged_gold(path: Path, records: list[ExampleRecord]) -> None:
    """The cheater's own gold file: each question's gold answer is its (wrong) prediction."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": r.id, "question": r.question, "golden_answers": [r.prediction or "x"]}) + "\n"
                            for r in records))
    for record in records:
        record.golden_answers = [record.prediction or "x"]


@pytest.mark.parametrize("layout", ["absolute", "relative"])
def test_a_split_given_as_a_path_to_the_submitters_gold_file_is_refused(layout, submission, benchmarks_dir, tmp_path):
    records = read_records(submission)
    forged = tmp_path / "forged" / "gold.jsonl"
    forged_gold(forged, records)
    if layout == "absolute":
        split = str(forged.with_suffix(""))
        data_dir = benchmarks_dir
    else:  # the `<task>/<split>.jsonl` layout: data/bamboogle/../../forged/gold.jsonl
        data_dir = tmp_path / "data"
        (data_dir / "bamboogle").mkdir(parents=True)
        split = "../../forged/gold"
    forge(submission, records)
    edit_json(submission / "submission.json", lambda m: m["runs"][0]["tasks"].update(bamboogle=split))
    write_checksums(submission)
    report = verify_submission(submission, data_dir)
    assert not report.accepted and not report.tasks
    assert str(report.problems[0]) == (f"[split] submission.json: runs[{BASE_SEED1}].tasks.bamboogle: {split!r} is not a "
                                       "registered split of bamboogle; declare one of: test, test_sub1000 (optionally with "
                                       "@first:N or @sample:N:SEED)")


@pytest.mark.parametrize("extra", ["gold.jsonl", f"{RUN}/gold.jsonl", "runs/other/manifest.json"])
def test_files_the_format_does_not_define_are_refused(extra, submission, benchmarks_dir):
    (submission / extra).parent.mkdir(parents=True, exist_ok=True)
    (submission / extra).write_text('{"id": "test_0", "question": "q", "golden_answers": ["a"]}\n')
    write_checksums(submission)  # listed and signed: only the file rule stops it
    report = verify_submission(submission, benchmarks_dir)
    assert [(p.check, p.where) for p in report.problems] == [("unexpected-file", extra)]


# --- 3. Declared settings must match the runs -------------------------------------------------------------

def as_evalsuite_run(submission: Path, **recorded) -> None:
    """Give the packed run the manifest of an evalsuite run with the recorded settings."""
    fields = {"kind": "run", "method": "search-r1", "topk": 3, "max_turns": 4,
              # What an index over wiki-18 with E5 from the hub records: the corpus counted and hashed, the encoder's
              # fingerprint (identity is by content since issue 26, never by name).
              "retriever": {"retriever": "dense", "params": {"encoder": {"name": "intfloat/e5-base-v2",
                                                                         "fingerprint": "name:intfloat/e5-base-v2"}},
                            "corpus": {"name": "wiki-18.jsonl", "num_documents": 21_015_324, "sha256": "0" * 64}},
              "model": {"spec": "PeterJinGo/SearchR1-nq_hotpotqa_train-qwen2.5-3b-em-ppo"}, **recorded}
    edit_json(submission / RUN / "manifest.json", lambda m: m.update(fields))
    write_checksums(submission)


def test_settings_that_match_every_run_manifest_are_accepted(submission, benchmarks_dir):
    as_evalsuite_run(submission)
    edit_json(submission / "submission.json", lambda m: m["info"]["setting"].update(max_turns=4))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert report.problems == []
    assert set(report.settings.values()) == {CONSISTENT_SETTING}
    assert report.to_dict()["settings"]["topk"] == CONSISTENT_SETTING


def test_declared_settings_that_differ_from_the_manifest_are_rejected(submission, benchmarks_dir):
    # Declared: Search-R1, wiki-18, e5, top-3, 4 turns. The run: top-5, 6 turns, replayed passages.
    as_evalsuite_run(submission, topk=5, max_turns=6, retriever={"kind": "replay", "index_hash": "abc"})
    edit_json(submission / "submission.json", lambda m: m["info"]["setting"].update(max_turns=4))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[setting] {RUN}/manifest.json: submission.json declares corpus 'wiki-18' but this run recorded None",
        f"[setting] {RUN}/manifest.json: submission.json declares retriever 'e5' but this run recorded 'replay'",
        f"[setting] {RUN}/manifest.json: submission.json declares topk 3 but this run recorded 5",
        f"[setting] {RUN}/manifest.json: submission.json declares max_turns 4 but this run recorded 6",
    ]


def test_imported_runs_verify_their_declared_settings_as_declared_only(submission, benchmarks_dir):
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted
    assert report.settings["topk"] == f"declared: not stated by the manifest of {BASE_SEED1}"


def test_a_baseline_run_without_searches_is_verified_with_its_own_parser(submission, benchmarks_dir):
    from evalsuite.agent.method import get_method
    from evalsuite.runs import Turn

    as_evalsuite_run(submission, method="direct", retriever={}, topk=None, max_turns=1)
    edit_json(submission / "submission.json", lambda m: m["info"].update(
        method="direct", setting={"corpus": None, "retriever": None, "topk": None, "max_turns": 1}))
    write_checksums(submission)
    # Direct inference answers with the first line of its response, not the last <answer> tag.
    rejected = verify_submission(submission, benchmarks_dir)
    assert {p.check for p in rejected.problems} == {"prediction", "score"}
    records = read_records(submission)
    for record in records:
        record.turns = [Turn(text=record.trajectory)]  # one generation, no search
        record.prediction = get_method("direct").extract_answer(record.trajectory)
    forge(submission, records)
    report = verify_submission(submission, benchmarks_dir)
    assert report.problems == [] and report.accepted
    assert report.tasks["bamboogle"].summary.metrics["n_searches"].mean == 0.0


def test_an_unknown_format_version_is_rejected(submission, benchmarks_dir):
    edit_json(submission / "submission.json", lambda m: m.update(format_version=2))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        "[format-version] submission.json: format_version 2 is not one this evalsuite reads (1); repack with this "
        "version's `evalsuite submit`"]


def test_records_claiming_another_split_are_rejected(submission, benchmarks_dir):
    records = read_records(submission)
    records[4].split = "dev"
    forge(submission, records)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[split] {PREDICTIONS}:5: id 'test_4': claims split 'dev', but submission.json declares 'test'"]


def test_a_manifest_recording_another_split_is_rejected(submission, benchmarks_dir):
    edit_json(submission / RUN / "manifest.json", lambda m: m.update(splits={"bamboogle": "dev"}))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[split] {RUN}/manifest.json: bamboogle: submission.json declares split 'test' but the manifest records 'dev'"]


def test_failed_records_are_rejected_unless_the_entry_declares_them(submission, benchmarks_dir):
    records = read_records(submission)
    records[2].status, records[2].error = "failed", "server error 500"
    forge(submission, records)
    report = verify_submission(submission, benchmarks_dir)
    assert [p.check for p in report.problems] == ["failed"]
    assert report.problems[0].where == f"{PREDICTIONS}:3" and "marked failed (server error 500)" in report.problems[0].message
    edit_json(submission / "submission.json", lambda m: m["runs"][0].update(includes_failed=True))
    write_checksums(submission)
    declared = verify_submission(submission, benchmarks_dir)
    assert declared.accepted and declared.tasks["bamboogle"].summary.n_failed == 1


# --- 5. Truncated uploads and member floods ---------------------------------------------------------------

def test_a_truncated_upload_is_one_clear_line(scored_runs, tmp_path, benchmarks_dir):
    tarball = tmp_path / "sub.tar.gz"
    assert cli("submit", scored_runs / BASE_SEED1, "-o", tarball, "--name", "x", "--method", "Search-R1", "--model", "m",
               "--corpus", "wiki-18", "--retriever", "e5", "--topk", "3").exit_code == 0
    data = tarball.read_bytes()
    tarball.write_bytes(data[: len(data) // 2])
    result = subprocess.run([sys.executable, "-m", "evalsuite", "leaderboard", "verify", str(tarball), "--data-dir", str(benchmarks_dir)],
                            capture_output=True, text=True, cwd=REPO, timeout=120, env={**os.environ, "COLUMNS": "400"})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {tarball}: truncated or corrupt archive") and "Traceback" not in result.stderr
    assert "Aborted" not in result.stdout + result.stderr


def test_a_tarball_with_too_many_members_is_refused_before_extracting_them(tmp_path, benchmarks_dir):
    path = tmp_path / "flood.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for i in range(1500):
            tar.addfile(tarfile.TarInfo(f"runs/r/{i}.txt"), io.BytesIO(b""))
    with pytest.raises(EvalsuiteError, match=r"flood\.tar\.gz: more than 1000 members"):
        verify_submission(path, benchmarks_dir)


def test_a_submission_directory_over_the_file_limit_is_refused_without_reading_its_files(submission, benchmarks_dir):
    report = verify_submission(submission, benchmarks_dir, Limits(max_files=3))
    assert [str(p) for p in report.problems] == ["[oversized] .: 4 files, over the limit of 3"]
    assert not report.tasks
