"""`evalsuite table` rescores a run against the registry's gold answers (the task's data), never the golds its
predictions.jsonl carries, when the data is here; without it, one footnote says what it used instead (issue 26)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalsuite.runs import RunDirectory
from evalsuite.scoring import score_record
from evalsuite.tables.sources import load_runs, settings_notes

STEM = "bamboogle_2026_04_28_16_36_search_r1_base_seed1"


def edited_golds(run: Path, out: Path) -> Path:
    """A copy of `run` whose golds are edited to each prediction and whose scores agree with them: EM 100."""
    shutil.copytree(run, out)
    records = RunDirectory(out).read_predictions()
    for record in records:
        record.golden_answers = [record.prediction or "x"]
        record.metrics = score_record(record)
    RunDirectory(out).rewrite_predictions(records)
    return out


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A cache of the test's own; the task data only where the test puts it."""
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EVALSUITE_DATA_DIR", raising=False)
    return monkeypatch


def test_a_run_with_edited_golds_shows_the_registry_scores(bamboogle_runs, benchmarks_dir, isolated, tmp_path):
    isolated.setenv("EVALSUITE_DATA_DIR", str(benchmarks_dir))
    honest = bamboogle_runs[STEM]
    forged = edited_golds(honest, tmp_path / "forged")
    stored = [json.loads(line)["metrics"]["em"] for line in (forged / "predictions.jsonl").read_text().splitlines()]
    assert sum(stored) == len(stored)  # the file claims EM 100
    for _ in range(2):  # parsed and rescored, then from the cache keyed by the predictions and the gold files
        honest_run, forged_run = load_runs([honest, forged])
        assert forged_run.scores("em").tasks == honest_run.scores("em").tasks
        assert forged_run.scores("f1").tasks == honest_run.scores("f1").tasks
        _, notes = settings_notes([honest_run, forged_run], honest_run.name)
        assert "forged: rescored against the registry's gold answers (bamboogle/test)." in notes


def test_without_the_task_data_one_line_says_the_stored_scores_were_used(bamboogle_runs, isolated, tmp_path):
    isolated.setenv("EVALSUITE_DATA_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    forged = edited_golds(bamboogle_runs[STEM], tmp_path / "forged")
    (run,) = load_runs([forged])
    assert set(run.scores("em").tasks["bamboogle"].values()) == {1.0}  # what predictions.jsonl says, as said:
    _, notes = settings_notes([run], run.name)
    assert notes[-1] == ("forged: scores as stored in predictions.jsonl for bamboogle/test (gold file not found here: "
                         "`evalsuite data download --tasks bamboogle`, or set EVALSUITE_DATA_DIR).")


def test_examples_not_in_the_registry_split_keep_their_scores_and_are_counted(make_run, benchmarks_dir, isolated, tmp_path):
    isolated.setenv("EVALSUITE_DATA_DIR", str(benchmarks_dir))
    path = make_run(tmp_path / "handmade", {"bamboogle": {"not-a-registry-id": {"em": 0.25}}}, splits={"bamboogle": "test"})
    for _ in range(2):
        (run,) = load_runs([path])
        assert run.scores("em").tasks["bamboogle"] == {"not-a-registry-id": 0.25}
        assert run.golds.unknown_ids == 1
