"""Termination and cost metrics (evalsuite.metrics.termination): scored on run records, by hand-made records."""

from __future__ import annotations

import pytest

from evalsuite.agent.runner import execute
from evalsuite.metrics.termination import RUN_METRICS
from evalsuite.runs.schema import ExampleRecord, Turn
from evalsuite.scoring import score_record
from tests.agent.test_run_directory import replay_spec


def _record(stop_reason: str | None, status: str = "ok") -> ExampleRecord:
    turns = [Turn(text="a", prompt_tokens=100, completion_tokens=20), Turn(text="b", prompt_tokens=180, completion_tokens=None)]
    return ExampleRecord(id="q", task="nq", question="?", golden_answers=["x"], prediction=None, turns=turns,
                         stop_reason=stop_reason, status=status)


@pytest.mark.parametrize(("stop_reason", "status", "which"), [
    ("answer", "ok", "stop_answer"), ("max_turns", "ok", "stop_max_turns"),
    ("context_budget", "ok", "stop_max_tokens"), ("error", "failed", "stop_error"), (None, "failed", "stop_error"),
])
def test_each_record_has_exactly_one_stop_reason(stop_reason, status, which):
    scores = score_record(_record(stop_reason, status), RUN_METRICS)
    stops = {name: value for name, value in scores.items() if name.startswith("stop_")}
    assert stops == {name: float(name == which) for name in stops}


def test_tokens_are_summed_over_the_turns_missing_counts_as_zero():
    scores = score_record(_record("answer"), RUN_METRICS)
    assert scores["prompt_tokens"] == 280.0 and scores["completion_tokens"] == 20.0


def test_a_run_scores_them_and_metrics_json_summarizes_them(tmp_path, trajectories_dir, benchmarks_dir):
    result = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:6"))
    for record in result.records:
        assert sum(record.metrics[name] for name in RUN_METRICS if name.startswith("stop_")) == 1.0
        assert record.metrics["stop_answer"] == float(record.stop_reason == "answer")
    nq = result.metrics.tasks["nq"].metrics
    share = sum(r.stop_reason == "answer" for r in result.records) / 6
    assert nq["stop_answer"].mean == pytest.approx(share)
    assert nq["completion_tokens"].mean == pytest.approx(
        sum(t.completion_tokens or 0 for r in result.records for t in r.turns) / 6)


def test_tables_show_them(tmp_path, trajectories_dir, benchmarks_dir):
    from typer.testing import CliRunner

    from evalsuite.cli import app

    result = execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:6"))
    for metric, expected in (("stop_answer", 100 * result.metrics.tasks["nq"].metrics["stop_answer"].mean),
                             ("prompt_tokens", result.metrics.tasks["nq"].metrics["prompt_tokens"].mean)):
        out = CliRunner().invoke(app, ["table", str(tmp_path / "run"), "--metric", metric, "--format", "csv"], catch_exceptions=False).output
        row = out.strip().split("\n\n")[0].splitlines()[1].split(",")
        assert float(row[-1]) == pytest.approx(expected, abs=0.006)
