"""Bounded and seen (issue 37, item 8, and its traceback list): every entry of a submission is looked at, only regular
files and the folders the format defines pass, indices are bounded before anything is sized by them, and each bad
input is one line naming the file and field; `leaderboard add` leaves nothing half-written behind."""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard import add_submission, verify_submission
from evalsuite.leaderboard.submission import write_checksums

from leaderboard_support import BASE_SEED1, cli

RUN_DIR = Path("runs") / BASE_SEED1
PREDICTIONS = f"runs/{BASE_SEED1}/predictions.jsonl.gz"


def lines_of(sub: Path) -> list[dict]:
    text = gzip.decompress((sub / PREDICTIONS).read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines()]


def write_lines(sub: Path, lines: list[dict]) -> None:
    (sub / PREDICTIONS).write_bytes(gzip.compress("".join(json.dumps(o) + "\n" for o in lines).encode()))
    write_checksums(sub)


def verified_within(sub: Path, benchmarks_dir: Path, seconds: float = 30):
    """The report, from a verification that must finish (a FIFO read would block it)."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(verify_submission(sub, benchmarks_dir)), daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert not worker.is_alive(), "verification blocked"
    return out[0]


def test_an_empty_predictions_file_is_one_problem(submission, benchmarks_dir):
    write_lines(submission, [])
    report = verify_submission(submission, benchmarks_dir)
    assert [(p.check, p.where) for p in report.problems] == [("missing-id", PREDICTIONS)]
    assert report.problems[0].message.startswith("bamboogle/test: 125 of the split's 125 ids missing")


@pytest.mark.parametrize(("field", "value", "checks"), [("task", "nq", {"undeclared-task", "missing-id"}),
                                                       ("id", "elsewhere", {"missing-id", "extra-id"})])
def test_an_all_foreign_predictions_file_is_refused_in_lines(submission, benchmarks_dir, field, value, checks):
    lines = lines_of(submission)
    for n, line in enumerate(lines):
        line[field] = f"{value}_{n}" if field == "id" else value
    write_lines(submission, lines)
    report = verify_submission(submission, benchmarks_dir)
    assert {p.check for p in report.problems} == checks
    assert not report.accepted and "bamboogle" not in report.tasks


@pytest.mark.parametrize("index", [10**6, 10**12, -1])
def test_a_sample_index_out_of_range_is_refused_before_anything_is_sized_by_it(submission, benchmarks_dir, index):
    lines = lines_of(submission)
    for line in lines:
        line["sample"] = 0
    lines.append({**lines[0], "sample": index})
    write_lines(submission, lines)
    started = time.monotonic()
    report = verify_submission(submission, benchmarks_dir)
    assert time.monotonic() - started < 20
    (problem,) = [p for p in report.problems if p.check == "sample"]
    assert problem.where == PREDICTIONS
    assert problem.message == (f"bamboogle/test: sample index {index} is out of range: the records hold at most 2 "
                               "samples of a question, numbered 0..1")
    assert not report.accepted and "bamboogle" not in report.tasks


@pytest.mark.parametrize(("shard", "message"), [(3, "Input should be a valid string"),
                                                ("three", "String should match pattern")])
def test_a_manifest_shard_that_is_not_i_of_n_is_one_schema_line(submission, benchmarks_dir, shard, message):
    path = submission / RUN_DIR / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shard"] = shard
    path.write_text(json.dumps(manifest))
    write_checksums(submission)
    problems = [str(p) for p in verify_submission(submission, benchmarks_dir).problems]
    assert len(problems) == 1 and problems[0].startswith(
        f"[schema] {RUN_DIR.as_posix()}/manifest.json: not a valid run manifest: field 'shard': {message}")


@pytest.mark.parametrize("model", ["5", "qwen", "[a, b]"])
def test_submit_info_whose_model_is_not_a_mapping_is_one_line(scored_runs, tmp_path, model):
    info = tmp_path / "info.yaml"
    info.write_text(f"name: x\nmethod: Search-R1\nmodel: {model}\n")
    out = tmp_path / "sub"
    result = cli("submit", scored_runs / BASE_SEED1, "-o", out, "--info", info)
    assert isinstance(result.exception, EvalsuiteError), result.output
    assert result.exception.message.startswith(f"{info}: field 'model' must be a mapping, got ")
    assert not out.exists()


def _fifo(sub: Path) -> str:
    os.mkfifo(sub / RUN_DIR / "extra.json")
    return f"{RUN_DIR.as_posix()}/extra.json"


def _empty_folder(sub: Path) -> str:
    (sub / "notes").mkdir()
    return "notes"


def _folder_in_a_run(sub: Path) -> str:
    (sub / RUN_DIR / "cache").mkdir()
    return f"{RUN_DIR.as_posix()}/cache"


def _link_to_a_folder(sub: Path) -> str:
    (sub / "runs" / "elsewhere").symlink_to(sub / RUN_DIR, target_is_directory=True)
    return "runs/elsewhere"


def _socket(sub: Path) -> str:
    import socket

    listener = socket.socket(socket.AF_UNIX)  # at the top: a socket's path must be short
    listener.bind(str(sub / "s"))
    listener.close()
    return "s"


@pytest.mark.parametrize(("make", "check", "message"), [
    (_fifo, "format", "is a named pipe (FIFO); a submission holds regular files only"),
    (_socket, "format", "is a socket; a submission holds regular files only"),
    (_link_to_a_folder, "format", "is a symbolic link; a submission holds regular files only"),
    (_empty_folder, "unexpected-file", "a folder the submission format does not define"),
    (_folder_in_a_run, "unexpected-file", "a folder the submission format does not define"),
])
def test_entries_that_are_not_the_formats_files_are_refused_and_add_leaves_nothing(
        make, check, message, submission, benchmarks_dir, tmp_path):
    write_checksums(submission)
    where = make(submission)
    report = verified_within(submission, benchmarks_dir)
    assert [(p.check, p.where) for p in report.problems] == [(check, where)]
    assert report.problems[0].message.startswith(message)
    leaderboard = tmp_path / "leaderboard"
    with pytest.raises(EvalsuiteError) as refused:
        add_submission(submission, leaderboard, data_dir=benchmarks_dir)
    assert f"[{check}] {where}" in refused.value.message and "\n" not in refused.value.message
    assert [p.name for p in leaderboard.rglob("*") if p.name.startswith((".partial-", ".staged-"))] == []
    assert not (leaderboard / "entries").exists() or not any((leaderboard / "entries").iterdir())


def test_an_accepted_entry_is_filed_with_the_verified_files_only(submission, benchmarks_dir, tmp_path):
    leaderboard = tmp_path / "leaderboard"
    target, report = add_submission(submission, leaderboard, data_dir=benchmarks_dir)
    assert report.accepted
    filed = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert filed == sorted(["checksums.sha256", "submission.json", "verification.json",
                            f"{RUN_DIR.as_posix()}/manifest.json", f"{RUN_DIR.as_posix()}/metrics.json", PREDICTIONS])
    assert [p.name for p in (leaderboard / "entries").iterdir()] == [target.name]  # no .partial-*, no .staged-*
