"""scores.npz: the per-example scores tables read instead of parsing predictions.jsonl, only while it is current."""

from __future__ import annotations

import os

import numpy as np

from evalsuite.runs import RunDirectory
from evalsuite.runs.columns import ScoreColumns, read_scores
from evalsuite.runs.schema import SCORES_FILE
from evalsuite.tables.sources import load_runs


def _run(write_run, tmp_path):
    return write_run(tmp_path / "run", {"nq": [{"em": 1.0, "f1": 1.0}, None, {"em": 0.0, "f1": 0.5}], "bamboogle": [{"em": 0.0, "f1": 0.0}]})


def _same(a: ScoreColumns, b: ScoreColumns) -> bool:
    return list(a.tasks) == list(b.tasks) and all(
        np.array_equal(a.tasks[t].ids, b.tasks[t].ids) and np.array_equal(a.tasks[t].failed, b.tasks[t].failed)
        and a.tasks[t].metrics.keys() == b.tasks[t].metrics.keys()
        and all(np.array_equal(a.tasks[t].metrics[m], b.tasks[t].metrics[m], equal_nan=True) for m in a.tasks[t].metrics)
        for t in a.tasks)


def test_columns_equal_the_records_and_survive_a_touch(write_run, tmp_path):
    path = _run(write_run, tmp_path)
    expected = ScoreColumns.from_records(RunDirectory(path).read_predictions())
    assert _same(read_scores(path), expected)
    predictions = path / "predictions.jsonl"
    os.utime(predictions, ns=(1, 1))  # a copy without timestamps: same bytes, so the hash still matches
    assert _same(read_scores(path), expected)


def test_changed_predictions_make_the_columns_stale_and_tables_read_the_file(write_run, tmp_path):
    path = _run(write_run, tmp_path)
    predictions = path / "predictions.jsonl"
    text = predictions.read_text()
    predictions.write_text(text.replace('"em":0.0', '"em":1.0', 1))  # same size, other bytes
    assert read_scores(path) is None
    (run,) = load_runs([path])
    assert run.scores("em").tasks["nq"]["nq-02"] == 1.0  # the edited value, read from predictions.jsonl
    predictions.write_text(text + text.splitlines()[-1].replace("bamboogle-00", "bamboogle-01") + "\n")
    assert read_scores(path) is None
    (run,) = load_runs([path])
    assert set(run.scores("em").tasks["bamboogle"]) == {"bamboogle-00", "bamboogle-01"}


def test_a_damaged_columns_file_falls_back_to_the_predictions(write_run, tmp_path, caplog):
    path = _run(write_run, tmp_path)
    (path / SCORES_FILE).write_bytes(b"not a zip file")
    assert read_scores(path) is None
    assert "unreadable" in caplog.text
    (run,) = load_runs([path])
    assert run.scores("em").tasks["nq"] == {"nq-00": 1.0, "nq-01": 0.0, "nq-02": 0.0}  # the failed example counts 0
