"""acc_judge as a per-example column: tables and paired tests read each judged answer's majority verdict."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.judges.accuracy import accuracy_columns, accuracy_scores
from evalsuite.judges.panel import majority_vote
from evalsuite.runs import ExampleRecord, RunDirectory, summarize
from evalsuite.runs.columns import write_scores
from evalsuite.scoring import score_record
from evalsuite.stats.significance import mcnemar_pvalues
from tests.conftest import requires_extra

# evalsuite's Fleiss' kappa, which the panel summaries report, runs on statsmodels (the [stats] extra)
FLEISS = requires_extra("stats", "statsmodels")


def test_columns_of_a_greedy_and_a_sampled_run_by_hand():
    verdicts = {("nq", "q0", "answer"): True, ("nq", "q1", "answer"): None, ("nq", "q2", "answer"): False}
    column = accuracy_columns(verdicts, "nq", ["q0", "q1", "q2", "q3"], 1)["acc_judge"]
    assert column[:3].tolist() == [1.0, 0.0, 0.0] and np.isnan(column[3])  # undecided 0, never judged NaN
    sampled = {("nq", "q0", "s0"): True, ("nq", "q0", "s1"): False, ("nq", "q0", "s2"): True,
               ("nq", "q1", "s0"): False, ("nq", "q1", "s1"): None}  # q1's third sample not judged
    columns = accuracy_columns(sampled, "nq", ["q0", "q1"], 3)
    assert columns["acc_judge_avg"].tolist() == pytest.approx([2 / 3, 0.0])
    assert columns["acc_judge_pass@2"].tolist() == pytest.approx([1 - 0 / 3, 0.0])  # 1 − C(1, 2)/C(3, 2)
    assert columns["acc_judge_pass@3"][0] == 1.0 and np.isnan(columns["acc_judge_pass@3"][1])
    assert accuracy_columns({}, "nq", ["q0"], 1) == {}


@FLEISS
def test_a_sampled_runs_summary_is_over_questions():
    records = [ExampleRecord(id=q, task="nq", question="?", golden_answers=["a"], prediction="a", sample=j, metrics={"em": 1.0})
               for q in ("q0", "q1") for j in range(2)]
    table = {("nq", "q0", "accuracy", "s0"): [True], ("nq", "q0", "accuracy", "s1"): [False],
             ("nq", "q1", "accuracy", "s0"): [True], ("nq", "q1", "accuracy", "s1"): [True]}
    result, summaries = accuracy_scores(records, table, ["j1"])
    assert list(summaries) == ["acc_judge_avg"] and summaries["acc_judge_avg"].mean == pytest.approx(0.75)
    assert result["n"] == 4 and result["n_questions"] == 2


def test_the_scorer_refuses_to_compute_it():
    record = ExampleRecord(id="q", task="nq", question="?", golden_answers=["a"], prediction="a")
    with pytest.raises(EvalsuiteError, match="decided by an LLM judge panel"):
        score_record(record, ["acc_judge"])


def _first_records(trajectories_dir: Path, pattern: str, out: Path, n: int) -> Path:
    """A run directory of the first n real records of a scored Bamboogle trajectory file."""
    (source,) = trajectories_dir.glob(pattern)
    assert CliRunner().invoke(app, ["score", str(source), "-o", str(out / "all")]).exit_code == 0
    full = RunDirectory(out / "all" / source.stem)
    run = RunDirectory(out / source.stem)
    records = full.read_predictions()[:n]
    run.write_manifest(full.read_manifest())
    run.rewrite_predictions(records)
    run.write_metrics(summarize(records))
    write_scores(run.path, records)
    return run.path


def test_tables_and_the_paired_test_read_acc_judge_from_a_real_judge_server(trajectories_dir: Path, tmp_path: Path,
                                                                          judge_server: str):
    from test_judge_server import _panel

    from evalsuite.judges.config import load_panel
    from evalsuite.judges.evaluate import judge_run

    panel = load_panel(_panel(tmp_path / "panel.yaml", judge_server + "/v1"))
    runs = [_first_records(trajectories_dir, pattern, tmp_path / "runs", 6)
            for pattern in ("bamboogle_2026_04_28_16_36*.json", "bamboogle_2026_04_29_06_48*.json")]
    verdicts = []
    for run in runs:
        judge_run(run, panel, ["accuracy"], cache_path=tmp_path / "cache.sqlite")
        lines = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
        assert {line["judge"] for line in lines} == {"smol-greedy", "smol-sampled"}  # each judge's verdict kept
        by_id: dict[str, list] = {}
        for line in lines:
            by_id.setdefault(line["example_id"], []).append(line["verdict"])
        verdicts.append({q: float(majority_vote(v) is True) for q, v in by_id.items()})
    out = CliRunner().invoke(app, ["table", *map(str, runs), "--metric", "acc_judge", "--format", "csv"],
                             catch_exceptions=False).output
    main, diffs = [list(csv.reader(io.StringIO(block))) for block in out.strip().split("\n\n")]
    notes = CliRunner().invoke(app, ["table", *map(str, runs), "--metric", "acc_judge"], catch_exceptions=False).output
    # judge_run recorded (outside the run) that it wrote these judgments: the footnote says judged here, naming the
    # panel, and never that the registry's golds rescored a judged metric
    assert "acc_judge judged here by the panel smol-greedy (" in notes and "submitter" not in notes
    assert "rescored against the registry's gold answers" not in notes
    values = [float(row[2]) for row in main[1:]]
    assert values == pytest.approx([100 * np.mean(list(v.values())) for v in verdicts], abs=0.006)
    header, row = diffs[0], diffs[-1]
    assert row[header.index("test")] == "McNemar (exact)"  # acc_judge is 0/1 per example: paired exactly
    ids = sorted(verdicts[0])
    only_second = sum(verdicts[1][q] > verdicts[0][q] for q in ids)
    only_first = sum(verdicts[0][q] > verdicts[1][q] for q in ids)
    assert float(row[header.index("p")]) == pytest.approx(float(mcnemar_pvalues(np.array([only_second]), np.array([only_first]))[0]), abs=5e-4)


def test_a_judged_run_still_verifies_for_the_leaderboard(trajectories_dir: Path, tmp_path: Path, benchmarks_dir: Path):
    """metrics.json gains acc_judge from `evalsuite judge`; verification cannot recompute a panel's verdicts and
    does not hold it against the run (nor the other judge metrics, which are not registered)."""
    from evalsuite.leaderboard import SubmissionInfo, pack_submission
    from evalsuite.leaderboard.submission import Setting
    from evalsuite.leaderboard.verify import verify_submission
    from evalsuite.runs.schema import MetricSummary

    run = RunDirectory(_first_records(trajectories_dir, "bamboogle_2026_04_28_16_36*.json", tmp_path / "runs", 125))
    metrics = run.read_metrics()
    metrics.tasks["bamboogle"].metrics["acc_judge"] = MetricSummary(mean=0.3, ci_low=0.22, ci_high=0.39)
    run.write_metrics(metrics)
    info = SubmissionInfo(name="judged", method="Search-R1", model={"name": "Qwen2.5-3B base"},
                          setting=Setting(corpus="wiki-18", retriever="e5", topk=3))
    report = verify_submission(pack_submission([run.path], tmp_path / "sub", info), benchmarks_dir)
    assert report.accepted, report.problem_lines()


def test_a_table_of_an_unjudged_run_says_how_to_judge_it(trajectories_dir: Path, tmp_path: Path):
    from evalsuite.errors import DataError

    run = _first_records(trajectories_dir, "bamboogle_2026_04_28_16_36*.json", tmp_path / "runs", 3)
    with pytest.raises(DataError, match="has no metric 'acc_judge'") as caught:
        CliRunner().invoke(app, ["table", str(run), "--metric", "acc_judge"], catch_exceptions=False)
    assert "--metrics accuracy" in caught.value.hint
