"""Training rows and the offline files they join: teacher queries from `evalsuite teacher-queries`, reference plans,
one file or one per task, and clear errors when a file matches no row or Progress has no teacher queries at all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evalsuite.errors import DataError
from evalsuite.methods.progress.recipe import ProgressConfig
from evalsuite.methods.search_p1.recipe import SearchP1Config
from evalsuite.training.config import TrainConfig
from evalsuite.training.data import training_rows
from evalsuite.training.recipe import get_recipe

CONFIGS = {"progress": ProgressConfig, "search-p1": SearchP1Config, "search-r1": TrainConfig}


def rows_of(config: TrainConfig) -> list[dict]:
    """The rows as the trainer reads them: with the columns of the config's recipe."""
    return training_rows(config, get_recipe(config.method).row_columns(config))


def test_teacher_queries_command_output_is_what_training_reads(tmp_path, benchmarks_dir):
    out = tmp_path / "teacher.jsonl"
    done = subprocess.run([sys.executable, "-m", "evalsuite", "teacher-queries", "--task", "musique", "--split", "dev_ctx",
                           "--data-dir", str(benchmarks_dir), "--from-data", "--limit", "3", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    written = [json.loads(line) for line in out.read_text().splitlines()]
    config = ProgressConfig(method="progress", tasks="musique", split="dev_ctx", subset="first:3", data_dir=str(benchmarks_dir), teacher_queries=str(out))
    rows = rows_of(config)
    assert [r["teacher_queries"] for r in rows] == [w["teacher_queries"] for w in written]
    assert all(r["teacher_queries"] for r in rows)


def test_one_file_per_task_and_a_file_matching_no_row(tmp_path, benchmarks_dir):
    nq = tmp_path / "nq.jsonl"
    config = ProgressConfig(method="progress", tasks="nq,bamboogle", split="test", subset="first:2", data_dir=str(benchmarks_dir))
    ids = [r["id"].split(":", 1)[1] for r in rows_of(TrainConfig(method="search-r1", tasks="nq", split="test", subset="first:2", data_dir=str(benchmarks_dir)))]
    nq.write_text("".join(json.dumps({"id": i, "teacher_queries": [f"q for {i}"]}) + "\n" for i in ids))
    rows = rows_of(ProgressConfig(**{**config.__dict__, "teacher_queries": {"nq": str(nq)}}))
    assert [r["teacher_queries"] for r in rows] == [[f"q for {ids[0]}"], [f"q for {ids[1]}"], [], []]  # bamboogle: no file, no decomposition
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "not-a-row", "teacher_queries": ["q"]}) + "\n")
    with pytest.raises(DataError, match="covers none of the 2 training rows"):
        rows_of(ProgressConfig(**{**config.__dict__, "tasks": "nq", "teacher_queries": str(other)}))
    with pytest.raises(DataError, match="does not train on"):
        rows_of(ProgressConfig(**{**config.__dict__, "teacher_queries": {"hotpotqa": str(nq)}}))


@pytest.mark.parametrize(("method", "message"), [("progress", "progress needs teacher queries"), ("search-p1", "search-p1 needs reference plans")])
def test_progress_and_search_p1_without_their_offline_data_are_refused(benchmarks_dir, method, message):
    config = CONFIGS[method](method=method, tasks="nq", split="test", subset="first:2", data_dir=str(benchmarks_dir))
    rows = rows_of(config)  # NQ rows carry no decomposition to fall back on
    with pytest.raises(DataError, match=message):
        get_recipe(method).prepare_data(config, rows)
    get_recipe("search-r1").prepare_data(TrainConfig(method="search-r1", tasks="nq", split="test", subset="first:2"), rows)
    adqa = CONFIGS[method](method=method, subset="first:2")
    get_recipe(method).prepare_data(adqa, rows_of(adqa))  # AD-QA has them
