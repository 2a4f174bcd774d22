"""Every command that makes a run directory writes the same one: `run` (and its Ray driver), `score`, `merge` and
`merge --as-seeds` all go through `RunDirectory` (start or write, then finish), so a directory holds the same files,
its records the same columns and its metrics.json the same schema, whichever command wrote it.

Real inputs: the replay backend over the recorded NQ trajectories of the shared data (12 questions), and a
recorded Bamboogle result file imported by `evalsuite score`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.agent.merge import merge_runs, merge_seed_runs
from evalsuite.agent.runner import execute, parse_shard
from evalsuite.cli import app
from evalsuite.metrics.termination import RUN_METRICS
from evalsuite.runs import RunDirectory
from tests.agent.test_run_directory import replay_spec

SUBSET = "first:12"
BAMBOOGLE_RECORDING = "bamboogle_2026_04_28_16_36_search_r1_base_seed1.json"


def files(directory: Path) -> set[str]:
    return {path.name for path in directory.iterdir()}


def columns(directory: Path) -> set[str]:
    """Every per-example metric the directory's ok records carry."""
    return {name for record in RunDirectory(directory).read_predictions() if record.status == "ok" for name in record.metrics}


def schema(directory: Path) -> dict[str, object]:
    """metrics.json's shape: its keys, `extra`'s keys, and each task's metric names with the keys of a summary."""
    data = json.loads((directory / "metrics.json").read_text())
    first = next(iter(next(iter(data["tasks"].values()))["metrics"].values()))
    return {"keys": sorted(data), "extra": sorted(data["extra"]), "summary": sorted(first),
            "metrics": {task: sorted(summary["metrics"]) for task, summary in data["tasks"].items()},
            "process": sorted(data["extra"]["process"])}


def score(*args: str) -> None:
    result = CliRunner().invoke(app, ["score", *args])
    assert result.exit_code == 0, result.output


def assert_same_directory(made: Path, run: Path) -> None:
    """`made` holds what the run directory `run` holds: the same files, columns and metrics.json schema, finished."""
    assert files(made) == files(run)
    assert columns(made) == columns(run)
    assert schema(made) == schema(run)
    assert RunDirectory(made).read_manifest().finished_at


@pytest.fixture(scope="module")
def run(tmp_path_factory, trajectories_dir, benchmarks_dir) -> Path:
    """`evalsuite run` (replay) over 12 NQ questions: the directory the other commands are held to."""
    out = tmp_path_factory.mktemp("writers") / "run"
    execute(replay_spec(trajectories_dir, benchmarks_dir, out, subset=SUBSET))
    return out


def test_a_run_holds_the_process_columns_and_summary_score_adds(run):
    assert {"manifest.json", "predictions.jsonl", "metrics.json"} <= files(run)
    assert {"n_novel", "n_redundant", *RUN_METRICS} <= columns(run)  # before, only `score` added the novelty counts
    process = json.loads((run / "metrics.json").read_text())["extra"]["process"]
    assert set(process["tasks"]) == {"nq"} and process["novelty_max_overlap"] == 1


def test_score_of_a_run_writes_the_same_directory_with_the_same_numbers(run, tmp_path):
    score(str(run), "-o", str(tmp_path))
    assert_same_directory(tmp_path / "run", run)  # before: no metrics.png, and the termination columns were dropped
    assert RunDirectory(tmp_path / "run").read_metrics() == RunDirectory(run).read_metrics()
    scored = RunDirectory(tmp_path / "run").read_manifest()
    assert scored.finished_at == RunDirectory(run).read_manifest().finished_at and scored.rescored_from == str(run.resolve())


def test_score_in_place_rewrites_the_records_it_rescored(run, tmp_path):
    """Rescoring a directory into itself: predictions.jsonl carries the new scores, as metrics.json does (before,
    only metrics.json and the cached columns changed)."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    score(str(copy), "-o", str(tmp_path), "--metrics", "em")
    assert columns(copy) == {"em", "n_novel", "n_redundant"}
    assert set(schema(copy)["metrics"]["nq"]) == {"em", "n_novel", "n_redundant"}


def test_merged_shards_write_the_same_directory_as_the_run(run, tmp_path, trajectories_dir, benchmarks_dir):
    shards = [tmp_path / f"shard{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        execute(replay_spec(trajectories_dir, benchmarks_dir, shard, subset=SUBSET, shard=parse_shard(f"{i}/2")))
        assert_same_directory(shard, run)
    merge_runs(shards, tmp_path / "merged")
    assert_same_directory(tmp_path / "merged", run)
    assert RunDirectory(tmp_path / "merged").read_metrics() == RunDirectory(run).read_metrics()


def test_seed_runs_merged_write_what_run_seeds_writes(tmp_path, trajectories_dir, benchmarks_dir):
    # replay ignores the temperature; --seeds needs sampling
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "seeds", subset="first:6", samples=2, seeds=(1, 2),
                       schedule="sync", temperature=0.7)
    execute(spec)
    for seed in (1, 2):
        execute(dataclasses.replace(spec, out=tmp_path / f"seed{seed}", config=spec.config.replace(samples=1, seeds=None, seed=seed)))
    merge_seed_runs([tmp_path / "seed1", tmp_path / "seed2"], tmp_path / "merged")
    assert_same_directory(tmp_path / "merged", tmp_path / "seeds")
    assert RunDirectory(tmp_path / "merged").read_metrics() == RunDirectory(tmp_path / "seeds").read_metrics()


def test_an_imported_result_file_has_a_runs_files_and_columns_but_the_run_only_ones(run, tmp_path, trajectories_dir):
    """Imported trajectories record no stop reason, so they have no termination or cost columns (evalsuite.metrics.
    termination); everything else is what a run directory holds, and the import is marked finished."""
    score(str(trajectories_dir / BAMBOOGLE_RECORDING), "-o", str(tmp_path))
    imported = tmp_path / Path(BAMBOOGLE_RECORDING).stem
    assert files(imported) == files(run)
    assert columns(imported) == columns(run) - set(RUN_METRICS)
    theirs, ours = schema(imported), schema(run)
    assert {k: v for k, v in theirs.items() if k != "metrics"} == {k: v for k, v in ours.items() if k != "metrics"}
    assert theirs["metrics"]["bamboogle"] == sorted(set(ours["metrics"]["nq"]) - set(RUN_METRICS))
    assert RunDirectory(imported).read_manifest().finished_at


@pytest.mark.slow
def test_the_ray_driver_writes_the_same_directory_as_the_run(run, tmp_path, trajectories_dir, benchmarks_dir):
    pytest.importorskip("ray", reason="needs Ray: pip install 'evalsuite[ray]'")
    from evalsuite.agent.distributed import RayOptions

    execute(replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "ray", subset=SUBSET), ray=RayOptions(address="local", actors=1))
    assert_same_directory(tmp_path / "ray", run)
    assert RunDirectory(tmp_path / "ray").read_metrics() == RunDirectory(run).read_metrics()
