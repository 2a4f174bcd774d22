"""Cached score columns: what tables read instead of parsing predictions.jsonl, only for its exact bytes."""

from __future__ import annotations

import os

import numpy as np

from evalsuite.runs import RunDirectory
from evalsuite.runs.columns import ScoreColumns, cache_path, read_scores
from evalsuite.runs.schema import SCORES_FILE
from evalsuite.files import file_sha256
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
    cache_path(file_sha256(path / "predictions.jsonl")).write_bytes(b"not a zip file")
    assert read_scores(path) is None
    assert "unreadable" in caplog.text
    (run,) = load_runs([path])
    assert run.scores("em").tasks["nq"] == {"nq-00": 1.0, "nq-01": 0.0, "nq-02": 0.0}  # the failed example counts 0


def test_a_predictions_file_edited_with_its_mtime_restored_shows_the_new_numbers(write_run, tmp_path):
    """Issue 26: `cp -p`, `rsync -t` and `tar x` restore an edited file's size and mtime; tables showed the old numbers."""
    path = _run(write_run, tmp_path)
    predictions = path / "predictions.jsonl"
    stat = predictions.stat()
    text = predictions.read_text()
    predictions.write_text(text.replace('"em":1.0', '"em":0.0', 1))  # same size
    os.utime(predictions, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert read_scores(path) is None
    (run,) = load_runs([path])
    assert run.scores("em").tasks["nq"]["nq-00"] == 0.0


def test_a_scores_file_inside_the_run_directory_is_never_read(write_run, tmp_path):
    """Issue 26: a replaced scores.npz showed EM 100 for a run whose predictions score less; even one that names the
    predictions' true hash is not read, since the cache lives outside every run directory."""
    path = _run(write_run, tmp_path)
    source = file_sha256(path / "predictions.jsonl")
    forged = {"format": np.array(1),  # the format d5cf7d1 wrote beside predictions.jsonl
               "source_sha256": np.array(source), "source_size": np.array((path / "predictions.jsonl").stat().st_size),
              "source_mtime_ns": np.array((path / "predictions.jsonl").stat().st_mtime_ns), "tasks": np.array(["nq"]),
              "0/ids": np.array(["nq-00", "nq-01", "nq-02"]), "0/failed": np.zeros(3, bool), "0/metric:em": np.ones(3)}
    np.savez(path / SCORES_FILE, **forged)
    (run,) = load_runs([path])
    assert run.scores("em").tasks["nq"] == {"nq-00": 1.0, "nq-01": 0.0, "nq-02": 0.0}
    assert set(run.tasks) == {"nq", "bamboogle"}


def test_a_forged_run_directory_shows_only_what_its_predictions_say(write_run, tmp_path_factory):
    """Issue 26's forger on `evalsuite table`: whatever it does to scores.npz, metrics.json or the predictions' mtime,
    the table's numbers are those of predictions.jsonl as it now is (a failed example 0)."""
    import json

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(edit=st.sampled_from(("none", "value", "status")), cache=st.sampled_from(("none", "forged", "garbage")),
           metrics=st.booleans(), keep_mtime=st.booleans())
    def forge(edit, cache, metrics, keep_mtime):
        path = _run(write_run, tmp_path_factory.mktemp("forged"))
        predictions = path / "predictions.jsonl"
        stat = predictions.stat()
        lines = predictions.read_text().splitlines()
        first = json.loads(lines[0])
        if edit == "value":
            first["metrics"]["em"] = 0.0
        elif edit == "status":
            first["status"] = "failed"
        lines[0] = json.dumps(first, separators=(",", ":"))
        predictions.write_text("\n".join(lines) + "\n")
        if keep_mtime:
            os.utime(predictions, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        if cache == "forged":
            np.savez(path / SCORES_FILE, format=np.array(1), source_sha256=np.array(file_sha256(predictions)),
                     source_size=np.array(predictions.stat().st_size), source_mtime_ns=np.array(predictions.stat().st_mtime_ns),
                     tasks=np.array(["nq"]), **{"0/ids": np.array(["nq-00", "nq-01", "nq-02"]), "0/failed": np.zeros(3, bool),
                                               "0/metric:em": np.ones(3)})
        elif cache == "garbage":
            (path / SCORES_FILE).write_bytes(b"PK\x03\x04 not really")
        if metrics:
            (path / "metrics.json").write_text((path / "metrics.json").read_text().replace('"mean":0.', '"mean":1.'))
        (run,) = load_runs([path])
        expected = {"nq-00": 0.0 if edit != "none" else 1.0, "nq-01": 0.0, "nq-02": 0.0}
        assert run.scores("em").tasks["nq"] == expected

    forge()
