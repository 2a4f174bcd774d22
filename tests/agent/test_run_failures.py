"""`evalsuite run` with failed examples: the final table says how many and how the means count them, and the
command exits 3 (documented in README.md) unless --allow-failures is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.cli.run import EXIT_FAILED_EXAMPLES
from evalsuite.runs import RunDirectory

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


def _first_ids(benchmarks_dir: Path, n: int) -> list[str]:
    with (benchmarks_dir / "nq.test_sub1000.jsonl").open() as handle:
        return [json.loads(next(handle))["id"] for _ in range(n)]


@pytest.fixture
def recording_missing_two(tmp_path, trajectories_dir, benchmarks_dir) -> Path:
    """The real NQ recording without two of the first eight questions: replaying them fails (missing recording)."""
    dropped = set(_first_ids(benchmarks_dir, 8)[2:4])
    items = [x for x in json.loads((trajectories_dir / NQ_RECORDING).read_text()) if x["id"] not in dropped]
    path = tmp_path / "partial_recording.json"
    path.write_text(json.dumps(items))
    return path


def _run(recording: Path, benchmarks_dir: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, [
        "run", "--backend", "replay", "--model", str(recording), "--retriever", "replay", "--tasks", "nq",
        "--split", "test_sub1000", "--subset", "first:8", "--data-dir", str(benchmarks_dir), "-o", str(out), *extra,
    ], catch_exceptions=False)


def test_failed_examples_are_reported_and_exit_3(recording_missing_two, benchmarks_dir, tmp_path):
    result = _run(recording_missing_two, benchmarks_dir, tmp_path / "run")
    assert result.exit_code == EXIT_FAILED_EXAMPLES == 3, result.output
    text = " ".join(result.output.split())
    assert "2 of 8 examples failed" in text and "score 0 on every metric and count in n" in text
    assert "exit code 3" in text
    metrics = RunDirectory(tmp_path / "run").read_metrics()
    assert metrics.tasks["nq"].n_failed == 2 and metrics.tasks["nq"].n == 8


def test_allow_failures_exits_0_and_a_clean_run_says_nothing(recording_missing_two, trajectories_dir, benchmarks_dir, tmp_path):
    allowed = _run(recording_missing_two, benchmarks_dir, tmp_path / "allowed", "--allow-failures")
    assert allowed.exit_code == 0, allowed.output
    assert "2 of 8 examples failed" in " ".join(allowed.output.split())
    clean = _run(trajectories_dir / NQ_RECORDING, benchmarks_dir, tmp_path / "clean")
    assert clean.exit_code == 0, clean.output
    assert "failed (backend error" not in " ".join(clean.output.split())
