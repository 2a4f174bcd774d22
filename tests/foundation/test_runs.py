"""Run directories: append-only predictions, torn-line recovery, schema versions, metrics summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, mean_ci, read_predictions, summarize
from evalsuite.runs.schema import MANIFEST_VERSION
from evalsuite.provenance import provenance_fields


def _record(i: int, task: str = "nq", em: float = 1.0) -> ExampleRecord:
    return ExampleRecord(id=f"q{i}", task=task, question="q?", golden_answers=["a"], prediction="a", metrics={"em": em, "f1": em, "cover_em": em})


def test_round_trip(tmp_path: Path) -> None:
    run = RunDirectory(tmp_path / "run")
    run.write_manifest(Manifest(tasks=["nq"], **provenance_fields()))
    with run.writer() as writer:
        writer.extend(_record(i) for i in range(3))
    assert [r.id for r in run.read_predictions()] == ["q0", "q1", "q2"]
    manifest = run.read_manifest()
    assert manifest.tasks == ["nq"] and manifest.schema_version == MANIFEST_VERSION and manifest.evalsuite_version


def test_torn_last_line_is_dropped_and_repaired(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    run = RunDirectory(tmp_path)
    with run.writer() as writer:
        writer.extend(_record(i) for i in range(2))
    with run.predictions_path.open("a") as handle:
        handle.write('{"schema_version": 1, "id": "q2", "ta')  # a writer killed mid-line
    assert [r.id for r in run.read_predictions()] == ["q0", "q1"]
    assert "torn last line" in caplog.text
    run.read_predictions(repair=True)
    with run.writer() as writer:
        writer.append(_record(2))
    assert [r.id for r in run.read_predictions()] == ["q0", "q1", "q2"]


def test_a_broken_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(_record(0).model_dump_json() + "\n{broken\n" + _record(1).model_dump_json() + "\n")
    with pytest.raises(DataError, match=r"predictions.jsonl:2: invalid JSON in the middle"):
        read_predictions(path)


def test_unknown_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    obj = json.loads(_record(0).model_dump_json())
    obj["schema_version"] = 99
    path.write_text(json.dumps(obj) + "\n")
    with pytest.raises(DataError, match="schema_version 99"):
        read_predictions(path)


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(EvalsuiteError, match="not a run directory"):
        RunDirectory(tmp_path).read_manifest()


def test_summary_means_and_group_macro_averages() -> None:
    records = [_record(i, "nq", em=float(i % 2)) for i in range(4)]  # nq EM 0.5
    records += [_record(i, "hotpotqa", em=1.0) for i in range(2)]  # hotpotqa EM 1.0
    records += [_record(i, "bamboogle", em=0.0) for i in range(3)]  # bamboogle EM 0.0
    summary = summarize(records)
    assert summary.tasks["nq"].n == 4 and summary.tasks["nq"].metrics["em"].mean == 0.5
    assert summary.averages["general"]["em"] == pytest.approx(0.5)
    assert summary.averages["multi-hop"]["em"] == pytest.approx(0.5)  # (1.0 + 0.0) / 2
    assert summary.averages["all"]["em"] == pytest.approx(0.5)  # (0.5 + 1.0 + 0.0) / 3


def test_confidence_interval_stays_in_range_and_is_seeded() -> None:
    values = np.array([1.0] * 3 + [0.0] * 122)
    ci = mean_ci(values)
    assert 0.0 <= ci.ci_low <= ci.mean <= ci.ci_high <= 1.0
    assert mean_ci(values) == ci
    constant = mean_ci(np.ones(10))
    assert constant.ci_low == constant.ci_high == 1.0
    single = mean_ci(np.array([0.3]))
    assert single.ci_low == single.ci_high == 0.3


def test_ci_width_matches_the_normal_approximation_for_a_large_sample() -> None:
    rng = np.random.default_rng(1)
    values = (rng.random(1000) < 0.4).astype(float)
    ci = mean_ci(values)
    p = values.mean()
    half = 1.96 * np.sqrt(p * (1 - p) / len(values))
    assert (ci.ci_high - ci.ci_low) / 2 == pytest.approx(half, rel=0.1)
