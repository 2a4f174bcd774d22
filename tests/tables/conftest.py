"""Fixtures for the table tests: real run directories made by `evalsuite score`, and hand-made small runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, summarize
from evalsuite.runs.columns import write_scores

BAMBOOGLE_FILES = ("bamboogle_*_search_r1_base.json", "bamboogle_*_search_r1_base_seed1.json",
                   "bamboogle_*_search_r1_instruct.json", "bamboogle_*_search_r1_instruct_seed1.json")


def invoke(*args: str):
    """Run the evalsuite CLI in-process; errors propagate as exceptions so tests see the message."""
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def bamboogle_runs(tmp_path_factory, trajectories_dir: Path) -> dict[str, Path]:
    """Run directories scored by `evalsuite score` from the four real Bamboogle trajectory files, by file stem."""
    files = [next(trajectories_dir.glob(pattern)) for pattern in BAMBOOGLE_FILES]
    out = tmp_path_factory.mktemp("scored")
    result = invoke("score", *map(str, files), "-o", str(out))
    assert result.exit_code == 0, result.output
    return {f.stem: out / f.stem for f in files}


@pytest.fixture(scope="session")
def recorded(trajectories_dir: Path):
    """Per-example scores as FlashRAG recorded them in each trajectory file: stem → metric → id → score."""
    def read(stem: str) -> dict[str, dict[str, float]]:
        items = json.loads((trajectories_dir / f"{stem}.json").read_text())
        return {m: {i["id"]: float(i["output"]["metric_score"][m]) for i in items} for m in ("em", "acc", "f1")}
    return read


def _write_run(path: Path, scores: dict[str, dict[str, dict[str, float]]], **manifest_fields) -> Path:
    """A run directory with hand-set metrics: task → id → metric → value."""
    run = RunDirectory(path)
    tasks = list(scores)
    run.write_manifest(Manifest(tasks=tasks, **{**provenance_fields(), **manifest_fields}))
    with run.writer(fresh=True) as writer:
        for task, examples in scores.items():
            for example_id, metrics in examples.items():
                writer.append(ExampleRecord(id=example_id, task=task, question="q?", golden_answers=["a"], prediction="a", metrics=metrics))
    return path


@pytest.fixture(scope="session")
def cli():
    """The evalsuite CLI, in-process."""
    return invoke


@pytest.fixture(scope="session")
def make_run():
    """Write a small run directory with hand-set metrics."""
    return _write_run


def _write_scored_run(path: Path, tasks: dict[str, list[dict[str, float] | None]], method: str | None = None,
              columns: bool = True) -> Path:
    """A run directory: task → per-example metrics (None = a failed example), metrics.json and scores.npz."""
    run = RunDirectory(path)
    run.write_manifest(Manifest(tasks=list(tasks), method=method, **provenance_fields()))
    records = [
        ExampleRecord(id=f"{task}-{i:02d}", task=task, question="q?", golden_answers=["a"], prediction=None if m is None else "a",
                      status="failed" if m is None else "ok", error="HTTP 503" if m is None else None, metrics=m or {})
        for task, examples in tasks.items() for i, m in enumerate(examples)
    ]
    with run.writer(fresh=True) as writer:
        writer.extend(records)
    run.write_metrics(summarize(records))
    if columns:
        write_scores(path, records)
    return path


@pytest.fixture(scope="session")
def write_run():
    """Write a run directory as `evalsuite run` does: predictions, metrics.json and scores.npz (None = a failed example)."""
    return _write_scored_run
