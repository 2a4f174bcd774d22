"""A run on a deterministic subset of a split (`evalsuite run --subset first:N`, every CPU-scale reproduction) is a
leaderboard entry of its own column: packed as `test@first:N`, verified against the subset rebuilt from the registry's
rows, and never ranked with entries on the whole split.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.results import add_submission
from evalsuite.leaderboard.site import build_site, load_entries
from evalsuite.leaderboard.standings import split_column_header, split_columns
from evalsuite.leaderboard.submission import SubmissionFile, split_and_subset, split_label, with_subset, write_checksums
from evalsuite.runs import RunDirectory

from leaderboard_support import BASE_SEED1, cli
from test_own_run_answers import forge, records_of
from tests.conftest import requires_extra


def replay_run(tmp_path: Path, trajectories_dir: Path, benchmarks_dir: Path, subset: str, name: str) -> Path:
    out = tmp_path / name
    result = cli("run", "--backend", "replay", "--model", trajectories_dir / f"{BASE_SEED1}.json", "--retriever", "replay",
                 "--tasks", "bamboogle", "--subset", subset, "--data-dir", benchmarks_dir, "-o", out)
    assert result.exit_code == 0, result.output
    return out


def submit(run: Path, out: Path, *extra: str) -> Path:
    result = cli("submit", run, "-o", out, "--name", f"replay {out.name}", "--method", "Search-R1", "--model", "replay", *extra)
    assert result.exit_code == 0, result.output
    return out


def declare(sub: Path, split: str) -> None:
    """Rewrite the submission's declared split (and its checksums), as a submitter could."""
    meta = SubmissionFile.model_validate_json((sub / "submission.json").read_text())
    meta.runs[0].tasks["bamboogle"] = split
    (sub / "submission.json").write_text(meta.model_dump_json(indent=2))
    write_checksums(sub)


def problems(report) -> list[tuple[str, str]]:
    return [(p.check, p.message) for p in report.problems]


def test_split_names_with_a_subset_round_trip():
    assert split_and_subset("test@first:40") == ("test", "first:40")
    assert split_and_subset("test_sub1000") == ("test_sub1000", None)
    assert with_subset("test", "first:40") == "test@first:40"
    assert with_subset("test", "full") == with_subset("test", None) == "test"
    assert split_label("test@first:40") == "test, first 40"
    assert split_label("test@sample:30:7") == "test, 30 sampled with seed 7"


@pytest.fixture(scope="module")
def first40(tmp_path_factory, trajectories_dir, benchmarks_dir) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("first40")
    run = replay_run(tmp, trajectories_dir, benchmarks_dir, "first:40", "run")
    return run, submit(run, tmp / "submission")


def test_a_subset_run_is_packed_with_its_subset_and_verifies(first40, benchmarks_dir):
    run, sub = first40
    meta = SubmissionFile.model_validate_json((sub / "submission.json").read_text())
    assert meta.runs[0].tasks == {"bamboogle": "test@first:40"}
    report = verify_submission(sub, benchmarks_dir)
    assert report.accepted, problems(report)
    verified = report.tasks["bamboogle"]
    assert verified.split == "test@first:40" and verified.summary.n == 40
    ids = [r.id for r in RunDirectory(run).read_predictions()]
    assert [r.id for r in verified.records] == ids  # the split's first 40 questions, in its order
    assert verified.summary.metrics["em"].mean == pytest.approx(sum(r.metrics["em"] for r in RunDirectory(run).read_predictions()) / 40)


@pytest.mark.parametrize("declared, expected", [
    # the whole split: 85 ids missing, and the run's subset named with the split to declare
    ("test", {"missing-id": "85 of the split's 125 ids missing", "split": "declare 'test@first:40'"}),
    # one question more than the run evaluated
    ("test@first:41", {"missing-id": "1 of the split's 41 ids missing", "split": "the run evaluated subset first:40"}),
    # another subset of the same size: other questions
    ("test@sample:40:1", {"missing-id": "ids missing", "split": "the run evaluated subset first:40"}),
    ("test@first:x", {"split": "invalid subset 'first:x'"}),
    ("test@full", {"split": "without @full"}),
    ("train@first:40", {"split": "is not a registered split of bamboogle"}),
])
def test_a_subset_declared_otherwise_than_the_run_evaluated_is_refused(first40, benchmarks_dir, tmp_path, declared, expected):
    sub = tmp_path / "sub"
    shutil.copytree(first40[1], sub)
    declare(sub, declared)
    report = verify_submission(sub, benchmarks_dir)
    assert not report.accepted
    found = problems(report)
    for check, words in expected.items():
        assert any(c == check and words in m for c, m in found), found


def test_records_of_other_questions_under_the_declared_subset_are_refused(first40, benchmarks_dir, tmp_path, trajectories_dir):
    """A submitter who swaps questions (keeping the count, the manifest and fresh checksums) is caught by the ids."""
    sub = tmp_path / "sub"
    shutil.copytree(first40[1], sub)
    other = records_of(submit(replay_run(tmp_path, trajectories_dir, benchmarks_dir, "sample:40:3", "other"), tmp_path / "o"), "other")
    forge(sub, "run", other)
    report = verify_submission(sub, benchmarks_dir)
    checks = {c for c, _ in problems(report)}
    assert {"missing-id", "extra-id"} <= checks


@requires_extra("site", "jinja2")  # the site's templates
def test_a_subset_entry_gets_its_own_column(first40, benchmarks_dir, tmp_path, trajectories_dir):
    board = tmp_path / "board"
    board.mkdir()
    whole = submit(replay_run(tmp_path, trajectories_dir, benchmarks_dir, "full", "whole"), tmp_path / "whole-sub")
    add_submission(whole, board, benchmarks_dir)
    add_submission(first40[1], board, benchmarks_dir)
    entries, warnings, unverified = load_entries(board, benchmarks_dir)
    assert not unverified, unverified
    columns = split_columns(entries)
    assert [c.key for c in columns] == ["bamboogle", "bamboogle:test@first:40"]
    assert split_column_header(columns[1]).label == "Bamboogle (test, first 40)"
    summary = build_site(board, tmp_path / "site", benchmarks_dir)
    assert summary.entries == 2
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Bamboogle (test, first 40)" in index


def test_a_subset_that_holds_every_question_is_the_whole_split(tmp_path, trajectories_dir, benchmarks_dir):
    """`--subset first:500` of Bamboogle's 125 questions evaluates all of them: ranked with the whole split."""
    sub = submit(replay_run(tmp_path, trajectories_dir, benchmarks_dir, "first:500", "all"), tmp_path / "sub")
    meta = SubmissionFile.model_validate_json((sub / "submission.json").read_text())
    assert meta.runs[0].tasks == {"bamboogle": "test@first:500"}
    report = verify_submission(sub, benchmarks_dir)
    assert report.accepted, problems(report)
    assert report.tasks["bamboogle"].split == "test" and report.tasks["bamboogle"].summary.n == 125
    declare(sub, "test")  # declared whole: the same questions, the same verdict
    assert verify_submission(sub, benchmarks_dir).accepted
