"""The pre-registered learning run (docs/recipes/runs/qwen-singlehop-learn, issue 40): its plan was committed before
its training record was made, both evaluations are verified leaderboard entries on the same 453 held-out questions,
and the checkpoint's entry names its training record. AD-QA ships inside the package, so this needs no ../shared."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime

import pytest

from evalsuite.files import file_sha256
from evalsuite.leaderboard import verify_submission

from leaderboard_support import REPO

RECORD = REPO / "docs" / "recipes" / "runs" / "qwen-singlehop-learn"
ENTRIES = REPO / "leaderboard" / "entries"
BASE = ENTRIES / "qwen2-5-coder-0-5b-instruct-base-of-the-pre-registered-cpu-run"
TRAINED = ENTRIES / "qwen2-5-coder-0-5b-instruct-grpo-40-steps-em-reward-pre-registered-cpu-run"


def test_both_evaluations_verify_on_the_same_held_out_questions():
    base, trained = verify_submission(BASE), verify_submission(TRAINED)
    assert base.accepted and trained.accepted, (base.problem_lines(), trained.problem_lines())
    base_task, trained_task = base.tasks["adqa-single"], trained.tasks["adqa-single"]
    assert base_task.split == trained_task.split == "test"
    assert [r.id for r in base_task.records] == [r.id for r in trained_task.records]
    assert base_task.summary.n == trained_task.summary.n == 453
    # the figures results.md reports: 333 and 410 of 453 exact
    assert round(base_task.summary.metrics["em"].mean * 453) == 333
    assert round(trained_task.summary.metrics["em"].mean * 453) == 410


def test_the_checkpoint_entry_names_its_training_record_and_reward():
    info = verify_submission(TRAINED).meta.info
    sha = file_sha256(RECORD / "train" / "train_manifest.json")
    assert info.model.source.startswith(f"train_manifest.json sha256:{sha}")
    assert "EM of the extracted answer" in info.training_reward and "no format" in info.training_reward
    assert "docs/recipes/runs/qwen-singlehop-learn/" in info.description
    manifest = json.loads((RECORD / "train" / "train_manifest.json").read_text())
    assert manifest["reward"]["structure_format_score"] == 0.0 and manifest["config"]["tasks"] == "adqa-single"


def test_the_plan_was_committed_before_the_training_record_was_made():
    """Every commit that touched preregistration.md precedes the training manifest's creation."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the repository's git history (a clone, not an unpacked wheel or sdist)")
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    if shallow != "false":
        pytest.skip("needs the whole git history; this clone is shallow (git fetch --unshallow)")
    log = subprocess.run(
        ["git", "log", "--format=%cI", "--", str(RECORD / "preregistration.md")],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.split()
    assert log, "preregistration.md has no commits"
    created = datetime.fromisoformat(json.loads((RECORD / "train" / "train_manifest.json").read_text())["created_at"])
    assert max(datetime.fromisoformat(t) for t in log) < created
