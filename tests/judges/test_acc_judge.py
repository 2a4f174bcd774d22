"""acc_judge: the panel's majority verdict per answer, κ and the confusion table against EM and cover-EM."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsuite.judges.accuracy import accuracy_requests, accuracy_scores, cohens_kappa
from evalsuite.judges.verdict import parse_verdict
from evalsuite.runs.schema import ExampleRecord
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with; without it the whole file is skipped, naming the extra
statsmodels_kappa = import_extra("stats", "statsmodels.stats.inter_rater").cohens_kappa


def _record(i: int, prediction: str | None, em: float, cover_em: float, sample: int | None = None) -> ExampleRecord:
    return ExampleRecord(id=f"q{i}", task="nq", question=f"question {i}?", golden_answers=["Jefferson"], prediction=prediction,
                         metrics={"em": em, "cover_em": cover_em}, sample=sample)


def test_hand_computed_accuracy_kappa_and_confusion_table():
    records = [_record(0, "Jefferson", 1, 1), _record(1, "Thomas Jefferson", 0, 1), _record(2, "Adams", 0, 0),
               _record(3, "Madison", 0, 0), _record(4, "jefferson", 1, 1), _record(5, "maybe", 0, 0)]
    votes = {"q0": [True, True], "q1": [True, True], "q2": [False, False], "q3": [False, None], "q4": [True, True],
             "q5": [True, False]}  # q3: one parsed "no" is a strict majority; q5: a tie, undecided
    table = {("nq", q, "accuracy", "answer"): v for q, v in votes.items()}
    result, summaries = accuracy_scores(records, table, ["j1", "j2"])
    summary = summaries["acc_judge"]
    assert result["acc_judge"] == pytest.approx(3 / 6) and summary.mean == pytest.approx(0.5)
    assert result["n_undecided"] == 1
    em = result["agreement"]["em"]
    # decided: judge [1, 1, 0, 0, 1] vs EM [1, 0, 0, 0, 1]: po = 0.8, pe = 0.48, κ = 0.32 / 0.52
    assert em["table"] == {"judge_yes_metric_1": 2, "judge_yes_metric_0": 1, "judge_no_metric_1": 0, "judge_no_metric_0": 2}
    assert em["kappa"] == pytest.approx(0.32 / 0.52)
    assert result["agreement"]["cover_em"]["kappa"] == pytest.approx(1.0)  # cover-EM credits "Thomas Jefferson" too
    low, high = summary.ci_low, summary.ci_high
    assert low < 0.5 < high


def test_kappa_matches_statsmodels_and_is_undefined_for_constant_equal_raters():
    rng = np.random.default_rng(0)
    a, b = rng.random(200) < 0.4, rng.random(200) < 0.5
    table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    assert cohens_kappa(a, b) == pytest.approx(statsmodels_kappa(np.array(table), return_results=False))
    assert np.isnan(cohens_kappa(np.ones(5), np.ones(5)))


def test_a_reply_that_says_neither_yes_nor_no_leaves_the_example_undecided():
    assert parse_verdict("The capital of France is Paris.").value is None
    records = [_record(0, "Jefferson", 1, 1)]
    result, _ = accuracy_scores(records, {("nq", "q0", "accuracy", "answer"): [None, None]}, ["j1", "j2"])
    assert result["n_undecided"] == 1 and result["acc_judge"] == 0.0


def test_requests_show_the_golds_and_the_prediction_per_sample():
    (greedy,) = accuracy_requests([_record(0, None, 0, 0)])
    assert greedy.item == "answer" and greedy.values["prediction"] == "(no answer)" and greedy.values["golds"] == "Jefferson"
    sampled = accuracy_requests([_record(0, "a", 0, 0, sample=0), _record(0, "b", 0, 0, sample=1)])
    assert [r.item for r in sampled] == ["s0", "s1"]
    assert "Gold answers (any one is correct): Jefferson" in greedy.template.messages(greedy.values)[1]["content"]


def test_acc_judge_end_to_end_with_a_real_local_judge_server(trajectories_dir: Path, tmp_path: Path, judge_server: str):
    # SmolLM2-135M's verdicts are poor; the path is real: requests, parsing, voting, cache, metrics.json, κ.
    from test_judge_server import _panel, _scored_run

    from evalsuite.judges.config import load_panel
    from evalsuite.judges.evaluate import judge_run
    from evalsuite.runs import RunDirectory

    run = _scored_run(trajectories_dir, tmp_path / "runs")
    panel = _panel(tmp_path / "panel.yaml", judge_server + "/v1")
    result = judge_run(run, load_panel(panel), ["accuracy"], cache_path=tmp_path / "cache.sqlite", limit=8)
    lines = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
    assert len(lines) == 16 and {line["metric"] for line in lines} == {"accuracy"}
    assert {line["judge"] for line in lines} == {"smol-greedy", "smol-sampled"}  # every judge's verdict kept
    records = RunDirectory(run).read_predictions()[:8]
    verdicts = {(line["example_id"], line["judge"]): line["verdict"] for line in lines}
    from evalsuite.judges.panel import majority_vote

    majority = [majority_vote([verdicts[(r.id, "smol-greedy")], verdicts[(r.id, "smol-sampled")]]) for r in records]
    task = records[0].task
    reported = result.results[task]["accuracy"]
    assert reported["acc_judge"] == pytest.approx(np.mean([m is True for m in majority]))
    assert reported["n_undecided"] == sum(m is None for m in majority)
    metrics = RunDirectory(run).read_metrics()
    assert metrics.tasks[task].metrics["acc_judge"].mean == pytest.approx(reported["acc_judge"])
    assert "kappa" in metrics.extra["judges"]["results"][task]["accuracy"]["agreement"]["em"]
    again = judge_run(run, load_panel(panel), ["accuracy"], cache_path=tmp_path / "cache.sqlite", limit=8)
    assert all(j.cached for j in again.judgments)  # the cache answers a repeat
