"""Sampled runs (K records per question): metrics.json, scores.npz and tables hold one row per question."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from evalsuite.errors import DataError
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, summarize
from evalsuite.runs.columns import ScoreColumns, read_scores, write_scores
from evalsuite.stats.intervals import CLUSTER_DEFF_FLOOR, effective_wilson, wilson

# question → the K = 4 predictions; gold "paris" for every question
PREDICTIONS = {
    "q0": ["paris", "Paris", "london", "paris"],  # 3 right; majority "paris"
    "q1": ["rome", "london", "rome", "paris"],    # 1 right; majority "rome"
    "q2": ["london", "london", "berlin", None],   # 0 right
}


def _records(predictions=PREDICTIONS, task="nq") -> list[ExampleRecord]:
    return [ExampleRecord(id=q, task=task, question="capital?", golden_answers=["paris"], prediction=p, sample=j,
                          sample_seed=100 + j, metrics={"em": float(p is not None and p.lower() == "paris"),
                                                         "n_searches": float(j)})
            for q, answers in predictions.items() for j, p in enumerate(answers)]


def test_metrics_json_counts_questions_not_samples():
    summary = summarize(_records())
    nq = summary.tasks["nq"]
    assert nq.n == 3
    means = {name: m.mean for name, m in nq.metrics.items()}
    assert means["em_avg"] == pytest.approx((3 / 4 + 1 / 4 + 0) / 3)
    assert means["em_maj"] == pytest.approx(1 / 3)
    # pass@2 = 1 − C(K−c, 2)/C(4, 2): q0 1 − 0/6, q1 1 − 3/6, q2 0
    assert means["em_pass@2"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert means["em_pass@4"] == pytest.approx(2 / 3) and means["em_pass@1"] == pytest.approx(means["em_avg"])
    assert means["n_searches_avg"] == pytest.approx(1.5)
    samples = summary.extra["samples"]
    assert samples["k"] == 4 and not samples["incomplete_questions"]
    # a one-sample run's sd from each question's sample variance (ddof 1): q0 3 of 4 right and q1 1 of 4 both
    # 0.25, q2 0 → sqrt(mean / n) = sqrt((1/6) / 3); not the sd of the per-label means (labels are the writer's)
    assert samples["spread"]["nq"]["em"] == pytest.approx(np.sqrt(1 / 18))
    # the interval of avg@K is over the 3 questions' means (Wilson at the effective n), not over 12 samples
    low, high = effective_wilson(np.array([[0.75, 0.25, 0.0]]), floor=CLUSTER_DEFF_FLOOR)
    assert (nq.metrics["em_avg"].ci_low, nq.metrics["em_avg"].ci_high) == pytest.approx((low[0], high[0]))
    low12, _ = wilson(np.array([4]), 12)
    assert nq.metrics["em_avg"].ci_low != pytest.approx(low12[0])


def test_a_run_mixing_sampled_and_greedy_records_is_one_error():
    greedy = ExampleRecord(id="q9", task="nq", question="?", golden_answers=["a"], prediction="a", metrics={"em": 1.0})
    with pytest.raises(DataError, match=r"mixes sampled records \(nq/q0 sample 0\) and greedy ones \(nq/q9\)"):
        summarize(_records() + [greedy])


def test_a_sample_recorded_twice_is_an_error():
    records = _records()
    with pytest.raises(DataError, match="nq/q0: sample 0 is recorded twice"):
        summarize(records + records[:1])


def test_an_unfinished_question_is_kept_and_counted():
    records = [r for r in _records() if not (r.id == "q2" and r.sample == 3)]
    summary = summarize(records)
    assert summary.tasks["nq"].n == 3 and summary.extra["samples"]["incomplete_questions"] == {"nq": 1}
    assert summary.tasks["nq"].metrics["em_avg"].mean == pytest.approx((0.75 + 0.25 + 0.0) / 3)


def test_scores_npz_round_trips_the_per_question_columns(tmp_path):
    run = RunDirectory(tmp_path / "sampled")
    run.write_manifest(Manifest(tasks=["nq"], **provenance_fields()))
    records = _records()
    with run.writer(fresh=True) as writer:
        writer.extend(records)
    write_scores(run.path, records)
    columns = read_scores(run.path)
    assert columns is not None and columns.samples == 4
    assert columns.tasks["nq"].ids.tolist() == ["q0", "q1", "q2"]
    assert columns.tasks["nq"].metrics["em_avg"].tolist() == ScoreColumns.from_records(records).tasks["nq"].metrics["em_avg"].tolist()


def test_a_table_compares_a_sampled_run_with_a_greedy_one(tmp_path, cli):
    rng = np.random.default_rng(5)
    ids = [f"q{i:03d}" for i in range(60)]
    sampled_dir, greedy_dir = RunDirectory(tmp_path / "sampled"), RunDirectory(tmp_path / "greedy")
    sampled = [ExampleRecord(id=q, task="nq", question="?", golden_answers=["a"], prediction="a" if right else "b", sample=j,
                             metrics={"em": float(right)})
               for q in ids for j, right in enumerate(rng.random(4) < 0.6)]
    greedy = [ExampleRecord(id=q, task="nq", question="?", golden_answers=["a"], prediction="a", metrics={"em": float(right)})
              for q, right in zip(ids, rng.random(60) < 0.4)]
    for run, records in ((sampled_dir, sampled), (greedy_dir, greedy)):
        run.write_manifest(Manifest(tasks=["nq"], **provenance_fields()))
        with run.writer(fresh=True) as writer:
            writer.extend(records)
        run.write_metrics(summarize(records))
        write_scores(run.path, records)
    out = cli("table", str(greedy_dir.path), str(sampled_dir.path), "--metric", "em_avg", "--format", "csv", "--ci").output
    main, diffs = [list(csv.reader(io.StringIO(block))) for block in out.strip().split("\n\n")]
    sampled_mean = np.mean([[r.metrics["em"] for r in sampled if r.id == q] for q in ids])
    greedy_mean = np.mean([r.metrics["em"] for r in greedy])
    values = {row[1]: float(row[2]) for row in main[1:]}
    assert values == pytest.approx({"greedy": 100 * greedy_mean, "sampled": 100 * sampled_mean}, abs=0.006)
    header = diffs[0]
    row = next(r for r in diffs[1:] if r[1] == "sampled")
    assert row[header.index("test")] == "randomization"  # avg@K is not 0/1: no McNemar
    with pytest.raises(DataError, match="has no metric 'em' \\(it has: em_avg, em_maj, em_pass@1, em_pass@2, em_pass@4\\)"):
        cli("table", str(greedy_dir.path), str(sampled_dir.path), "--metric", "em", "--format", "csv")
