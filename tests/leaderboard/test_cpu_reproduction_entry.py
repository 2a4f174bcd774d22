"""The shipped CPU-scale reproduction entry (docs/recipes/reproduce.md): our own recipe's checkpoint, verified on the
128-question subset of AD-QA's test split it declares, linked by sha256 to the training manifest recorded beside the
docs, and ranked apart from the paper-scale entries. AD-QA ships inside the package, so this needs no ../shared."""

from __future__ import annotations

import gzip
import json

from evalsuite.files import file_sha256
from evalsuite.leaderboard import verify_submission
from evalsuite.runs import RunDirectory

from leaderboard_support import REPO

ENTRY = REPO / "leaderboard" / "entries" / "search-r1-gemma3-270m-cpu-scale-reproduction"
RECORD = REPO / "docs" / "recipes" / "runs" / "search-r1-cpu-learn"


def test_the_cpu_reproduction_entry_verifies_on_its_subset_and_names_its_training():
    report = verify_submission(ENTRY)
    assert report.accepted, report.problem_lines()
    assert "CPU-scale reproduction" in report.meta.info.name
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
