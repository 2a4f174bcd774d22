"""The `cpu_learn` run's submission (docs/recipes/reproduce.md): a format-reward run without search whose policy
collapsed to a constant answer (issue 40). It is withdrawn from the leaderboard and kept, still verifiable, beside its
training record; its labels say what it is. AD-QA ships inside the package, so this needs no ../shared."""

from __future__ import annotations

import gzip
import json

from evalsuite.files import file_sha256
from evalsuite.leaderboard import verify_submission
from evalsuite.runs import RunDirectory

from leaderboard_support import REPO

RECORD = REPO / "docs" / "recipes" / "runs" / "search-r1-cpu-learn"
ENTRY = RECORD / "submission"


def test_the_cpu_reproduction_entry_verifies_on_its_subset_and_names_its_training():
    report = verify_submission(ENTRY)
    assert report.accepted, report.problem_lines()
    assert "format-reward run without search" in report.meta.info.name and "withdrawn" in report.meta.info.name
    verified = report.tasks["adqa"]
    assert verified.split == "test@first:128" and verified.summary.n == 128
    assert verified.summary.metrics["has_answer"].mean == 1.0  # the checkpoint answers every held-out question
    sha = file_sha256(RECORD / "train" / "train_manifest.json")
    assert report.meta.info.model.source == f"train_manifest.json sha256:{sha}"
    link = RunDirectory(ENTRY / "runs" / "eval-trained").read_manifest().run_config["reproduce"]["training_manifest"]
    assert link["sha256"] == sha


def test_the_recorded_base_run_answers_the_same_questions_less_often():
    """The record's base evaluation: the same 128 ids, answered in 35 (27.3%), as the docs' table says."""
    base = [json.loads(line) for line in gzip.decompress((RECORD / "eval-base" / "predictions.jsonl.gz").read_bytes()).decode().splitlines()]
    trained = verify_submission(ENTRY).tasks["adqa"].records
    assert [r["id"] for r in base] == [r.id for r in trained]
    assert sum(r["prediction"] is not None for r in base) == 35
    assert sum(r.prediction is not None for r in trained) == 128


def test_the_run_is_withdrawn_from_the_leaderboard():
    """No filed entry is this run's: none names its training manifest or its checkpoint's predictions."""
    entries = REPO / "leaderboard" / "entries"
    source = json.loads((ENTRY / "submission.json").read_text())["info"]["model"]["source"]
    predictions = file_sha256(ENTRY / "runs" / "eval-trained" / "predictions.jsonl.gz")
    for entry in entries.iterdir():
        assert json.loads((entry / "submission.json").read_text())["info"]["model"].get("source") != source, entry.name
        assert predictions not in {file_sha256(p) for p in entry.glob("runs/*/predictions.jsonl.gz")}, entry.name


def test_its_labels_say_what_it_is_a_constant_answer_without_search():
    """Issue 40: max_turns 0 (never searched), a reward paying 0.1 for any answer block, EM 0, and a policy that
    answers "Colosseum" to 123 of the 128 held-out questions and "Rome" to the other 5; the card states the reward
    and the turn limit."""
    from collections import Counter

    report = verify_submission(ENTRY)
    info = report.meta.info
    assert info.setting.max_turns == 0
    assert "0.1 for any <answer> block" in info.training_reward and "max_turns 0" in info.training_reward
    verified = report.tasks["adqa"]
    assert Counter(r.prediction for r in verified.records) == {"Colosseum": 123, "Rome": 5}
    assert verified.summary.metrics["em"].mean == 0.0
    assert '"Colosseum"' in info.description and "EM 0" in info.description
    from evalsuite.leaderboard.standings import trained_line

    assert trained_line(info).endswith("· max_turns 0 (no search)")
