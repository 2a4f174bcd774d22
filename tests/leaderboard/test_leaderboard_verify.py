"""Verification: a valid submission is accepted; each kind of tampering is rejected with a message naming it."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from evalsuite.leaderboard import Limits, add_submission, pack_submission, verify_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.errors import EvalsuiteError

from leaderboard_support import BASE_SEED1, cli, info


def predictions(sub: Path) -> Path:
    return sub / "runs" / BASE_SEED1 / "predictions.jsonl.gz"


def read_lines(sub: Path) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(predictions(sub).read_bytes()).decode().splitlines()]


def write_lines(sub: Path, rows: list[dict], checksums: bool = True) -> None:
    predictions(sub).write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    if checksums:
        write_checksums(sub)  # a careful cheater re-signs the files, so only the content checks can catch it


def checks(report) -> set[str]:
    return {p.check for p in report.problems}


def test_valid_submission_is_accepted_with_scores_recomputed(submission, benchmarks_dir, trajectories_dir):
    report = verify_submission(submission, benchmarks_dir)
    assert report.problems == []
    assert report.accepted
    task = report.tasks["bamboogle"]
    assert (task.split, task.summary.n) == ("test", 125)
    # The recorded FlashRAG EM of the same 125 outputs, read straight from the original file: 11 correct.
    recorded = json.loads((trajectories_dir / f"{BASE_SEED1}.json").read_text())
    assert sum(item["output"]["metric_score"]["em"] for item in recorded) == 11
    assert task.summary.metrics["em"].mean == pytest.approx(11 / 125)
    assert [r.id for r in task.records] == [f"test_{i}" for i in range(125)]


def test_changed_summary_score_is_rejected(submission, benchmarks_dir):
    metrics = submission / "runs" / BASE_SEED1 / "metrics.json"
    data = json.loads(metrics.read_text())
    data["tasks"]["bamboogle"]["metrics"]["em"]["mean"] = 0.5
    metrics.write_text(json.dumps(data))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert not report.accepted
    assert [str(p) for p in report.problems] == [
        f"[score] runs/{BASE_SEED1}/metrics.json: bamboogle: claimed em 0.5 but recomputed 0.088"
    ]


def test_changed_example_score_is_rejected_naming_the_id(submission, benchmarks_dir):
    rows = read_lines(submission)
    wrong = next(i for i, r in enumerate(rows) if r["metrics"]["em"] == 0.0)
    rows[wrong]["metrics"]["em"] = 1.0
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert checks(report) == {"score"}
    assert str(report.problems[0]) == (
        f"[score] runs/{BASE_SEED1}/predictions.jsonl.gz:{wrong + 1}: id {rows[wrong]['id']!r}: claimed em 1 but "
        "recomputed 0 against the registry's gold answers"
    )


def test_removed_example_is_rejected(submission, benchmarks_dir):
    rows = read_lines(submission)
    removed = rows.pop(7)
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert checks(report) == {"missing-id"}
    assert f"1 of the split's 125 ids missing: {removed['id']}" in str(report.problems[0])


def test_duplicated_id_is_rejected(submission, benchmarks_dir):
    rows = read_lines(submission)
    rows.append(rows[3])
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert checks(report) == {"duplicate-id"}
    assert str(report.problems[0]) == (
        f"[duplicate-id] runs/{BASE_SEED1}/predictions.jsonl.gz:126: bamboogle/test: id 'test_3' appears again (first at line 4)"
    )


def test_extra_id_is_rejected(submission, benchmarks_dir):
    rows = read_lines(submission)
    rows.append({**rows[0], "id": "test_999"})
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert checks(report) == {"extra-id"}
    assert "1 ids not in the split: test_999" in str(report.problems[0])


def test_gold_answer_edited_in_the_submission_is_rejected_and_not_used(submission, benchmarks_dir):
    rows = read_lines(submission)
    index = next(i for i, r in enumerate(rows) if r["metrics"]["em"] == 0.0 and r["prediction"])
    # The cheater makes the gold agree with the wrong prediction and claims full marks for it.
    rows[index]["golden_answers"] = [rows[index]["prediction"]]
    rows[index]["metrics"].update(em=1.0, cover_em=1.0, f1=1.0, precision=1.0, recall=1.0)
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert "gold-edited" in checks(report)
    gold = next(p for p in report.problems if p.check == "gold-edited")
    assert gold.where.endswith(f":{index + 1}") and rows[index]["id"] in gold.message
    # Scores come from the registry's gold, so the claimed 1.0 is also caught as a score mismatch.
    assert any(p.check == "score" and "claimed em 1 but recomputed 0" in p.message for p in report.problems)


def test_bad_checksum_is_rejected(submission, benchmarks_dir):
    manifest = submission / "runs" / BASE_SEED1 / "manifest.json"
    data = json.loads(manifest.read_text())
    data["notes"] = "edited after packing"
    manifest.write_text(json.dumps(data))
    report = verify_submission(submission, benchmarks_dir)
    assert checks(report) == {"checksum"}
    assert str(report.problems[0]).startswith(f"[checksum] runs/{BASE_SEED1}/manifest.json: sha256 ")


def test_unlisted_file_is_rejected(submission, benchmarks_dir):
    checksums = submission / "checksums.sha256"
    checksums.write_text("".join(line + "\n" for line in checksums.read_text().splitlines() if "metrics.json" not in line))
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [f"[checksum] runs/{BASE_SEED1}/metrics.json: present but not listed in checksums.sha256"]


def test_unknown_task_is_rejected(submission, benchmarks_dir):
    meta = json.loads((submission / "submission.json").read_text())
    meta["runs"][0]["tasks"] = {"bamboogel": "test"}
    (submission / "submission.json").write_text(json.dumps(meta))
    rows = read_lines(submission)
    for row in rows:
        row["task"] = "bamboogel"
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert "unknown-task" in checks(report)
    assert "unknown task 'bamboogel' (did you mean bamboogle?)" in str(report.problems[0])


def test_non_utf8_predictions_are_rejected(submission, benchmarks_dir):
    rows = read_lines(submission)
    raw = ("".join(json.dumps(r) + "\n" for r in rows)).encode()
    predictions(submission).write_bytes(gzip.compress(raw[:500] + b"\xff\xfe" + raw[500:]))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[encoding] runs/{BASE_SEED1}/predictions.jsonl.gz: not UTF-8 (invalid start byte at byte 500)"
    ]


def test_oversized_file_is_rejected(submission, benchmarks_dir):
    report = verify_submission(submission, benchmarks_dir, Limits(max_file_bytes=50_000))
    assert "oversized" in checks(report)
    assert any(p.where == f"runs/{BASE_SEED1}/predictions.jsonl.gz" and "more than 50000 bytes" in p.message for p in report.problems)


def test_prediction_swapped_without_its_trajectory_is_rejected(submission, benchmarks_dir):
    rows = read_lines(submission)
    rows[0]["prediction"] = "a made-up answer"
    rows[0]["metrics"].update(em=0.0, cover_em=0.0, f1=0.0, precision=0.0, recall=0.0)
    write_lines(submission, rows)
    report = verify_submission(submission, benchmarks_dir)
    assert checks(report) == {"prediction"}
    assert next(p.message for p in report.problems if p.check == "prediction") == (
        f"id 'test_0': prediction 'a made-up answer' is not what the method's parser reads from the trajectory ({rows[0]['trajectory'].rsplit('<answer>', 1)[1].split('</answer>')[0].strip()!r})")


def test_tarball_round_trip_is_accepted(scored_runs, tmp_path, benchmarks_dir):
    tarball = pack_submission([scored_runs / BASE_SEED1], tmp_path / "sub.tar.gz", info())
    again = pack_submission([scored_runs / BASE_SEED1], tmp_path / "again.tar.gz", info())
    report = verify_submission(tarball, benchmarks_dir)
    assert report.accepted and report.n_files == 4
    # Packing is reproducible apart from the creation time in submission.json.
    assert tarfile.open(tarball).getnames() == tarfile.open(again).getnames()


def test_tarball_with_an_escaping_path_is_refused(tmp_path, benchmarks_dir):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = b"x"
        member = tarfile.TarInfo("../evil.txt")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    with pytest.raises(EvalsuiteError, match=r"member '\.\./evil\.txt' has an unsafe path"):
        verify_submission(path, benchmarks_dir)
    assert not (tmp_path.parent / "evil.txt").exists()


def test_verify_cli_exit_codes_and_report(submission, packed, benchmarks_dir):
    ok = cli("leaderboard", "verify", packed, "--data-dir", benchmarks_dir)
    assert ok.exit_code == 0, ok.output
    assert "ACCEPTED" in ok.output and "bamboogle/test: n=125 EM 0.0880" in ok.output
    rows = read_lines(submission)
    write_lines(submission, rows[1:])
    bad = cli("leaderboard", "verify", submission, "--data-dir", benchmarks_dir)
    assert bad.exit_code == 1
    assert "REJECTED" in bad.output and "[missing-id]" in bad.output and "test_0" in bad.output


def test_add_files_an_accepted_submission_and_refuses_a_rejected_one(packed, submission, tmp_path, benchmarks_dir):
    target, report = add_submission(packed, tmp_path / "results", data_dir=benchmarks_dir)
    assert target == tmp_path / "results" / "entries" / "search-r1-base-test"
    record = json.loads((target / "verification.json").read_text())
    assert record["accepted"] and record["tasks"]["bamboogle"]["metrics"]["em"]["mean"] == pytest.approx(0.088)
    # The filed entry still verifies (verification.json is not part of the signed content).
    assert verify_submission(target, benchmarks_dir).accepted
    with pytest.raises(EvalsuiteError, match="already exists"):
        add_submission(packed, tmp_path / "results", data_dir=benchmarks_dir)
    write_lines(submission, read_lines(submission)[:-1])
    with pytest.raises(EvalsuiteError, match=r"rejected \(1 problems\).*missing-id"):
        add_submission(submission, tmp_path / "other", data_dir=benchmarks_dir)
    assert not (tmp_path / "other" / "entries").exists() or not any((tmp_path / "other" / "entries").iterdir())


def test_submit_cli_packs_with_metadata_and_split_override(scored_runs, tmp_path, benchmarks_dir):
    out = tmp_path / "sub"
    result = cli("submit", scored_runs / BASE_SEED1, "-o", out, "--name", "CLI entry", "--method", "Search-R1",
                 "--model", "Qwen2.5-3B", "--paper", "https://arxiv.org/abs/2503.09516", "--topk", "3",
                 "--split", "bamboogle=test")
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "submission.json").read_text())
    assert meta["info"]["name"] == "CLI entry" and meta["info"]["setting"]["topk"] == 3
    assert meta["runs"] == [{"name": BASE_SEED1, "tasks": {"bamboogle": "test"}}]
    assert verify_submission(out, benchmarks_dir).accepted
    bad = cli("submit", scored_runs / BASE_SEED1, "-o", tmp_path / "x", "--name", "x", "--method", "m", "--model", "m",
              "--paper", "javascript:alert(1)")
    assert bad.exit_code != 0
    assert "paper must be an http(s) address" in str(bad.exception)
