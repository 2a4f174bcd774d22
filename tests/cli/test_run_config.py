"""`evalsuite run --config`: options from a YAML/JSON file, flags override it, and a run repeats from the resolved
config its manifest records. Real runs: the replay backend over recorded Search-R1 NQ trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.runs import RunDirectory

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


def run(*args: str):
    return CliRunner().invoke(app, ["run", *args])


def outcome(run_dir: Path) -> list[tuple]:
    return [(r.task, r.id, r.prediction, r.trajectory, r.status, r.metrics) for r in RunDirectory(run_dir).read_predictions()]


@pytest.fixture
def config_file(tmp_path, trajectories_dir, benchmarks_dir) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(
        f"model: {trajectories_dir / NQ_RECORDING}\n"
        "backend: replay\n"
        "retriever: replay\n"
        "tasks: [nq]          # a list joins into nq\n"
        "split: test_sub1000\n"
        f"data-dir: {benchmarks_dir}\n"
        "limit: 8\n"
        "max_turns: 4\n"
        "batch_size: 3\n",
        encoding="utf-8",
    )
    return path


def test_a_run_from_a_config_file_with_a_flag_override_repeats_from_its_manifest(tmp_path, config_file):
    first = tmp_path / "first"
    result = run("--config", str(config_file), "--limit", "6", "-o", str(first), "--json")
    assert result.exit_code == 0, result.output
    manifest = RunDirectory(first).read_manifest()
    assert manifest.subset == "first:6" and manifest.tasks == ["nq"] and manifest.splits == {"nq": "test_sub1000"}
    recorded = manifest.run_config
    assert recorded["limit"] == 6 and recorded["tasks"] == "nq" and recorded["batch_size"] == 3 and recorded["backend"] == "replay"
    assert recorded["topk"] == 3 and recorded["subset"] is None  # defaults are recorded too
    assert not {"output", "resume", "json", "config"} & recorded.keys()  # where and how, not what
    assert len(outcome(first)) == 6

    again = tmp_path / "again"
    result = run("--config", str(first / "manifest.json"), "-o", str(again))
    assert result.exit_code == 0, result.output
    assert outcome(again) == outcome(first)
    assert RunDirectory(again).read_manifest().run_config == recorded

    # the run directory names its manifest; a flag still overrides what it recorded
    shorter = tmp_path / "shorter"
    result = run("-c", str(first), "--limit", "2", "-o", str(shorter))
    assert result.exit_code == 0, result.output
    assert outcome(shorter) == outcome(first)[:2]


def test_a_json_config_file_and_the_command_line_agree(tmp_path, trajectories_dir, benchmarks_dir):
    options = {"model": str(trajectories_dir / NQ_RECORDING), "backend": "replay", "retriever": "replay", "tasks": "nq",
               "split": "test_sub1000", "data_dir": str(benchmarks_dir), "subset": "first:4"}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(options), encoding="utf-8")
    assert run("--config", str(path), "-o", str(tmp_path / "from-file")).exit_code == 0
    flags = [arg for key, value in options.items() for arg in (f"--{key.replace('_', '-')}", value)]
    assert run(*flags, "-o", str(tmp_path / "from-flags")).exit_code == 0
    assert outcome(tmp_path / "from-file") == outcome(tmp_path / "from-flags")
    assert len(outcome(tmp_path / "from-file")) == 4


def test_an_unknown_key_is_one_error_naming_the_key_file_and_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("tasks: nq\nmax_turn: 3\n", encoding="utf-8")
    result = run("--config", str(path))
    assert isinstance(result.exception, EvalsuiteError)
    assert result.exception.message == f"{path}:2: unknown option 'max_turn' in the config file"
    assert "did you mean max_turns?" in result.exception.hint


def test_a_bad_value_names_the_file_and_line(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("tasks: nq\n\ntopk: many\n", encoding="utf-8")
    result = run("--config", str(path))
    assert isinstance(result.exception, EvalsuiteError)
    assert result.exception.message.startswith(f"{path}:3: ") and "--topk" in result.exception.message


def test_both_subset_and_limit_is_an_error_unless_a_flag_overrides_the_file(tmp_path, config_file):
    path = tmp_path / "both.yaml"
    path.write_text("tasks: nq\nsubset: first:5\nlimit: 3\n", encoding="utf-8")
    result = run("--config", str(path))
    assert isinstance(result.exception, EvalsuiteError)
    assert result.exception.message == "both --subset first:5 and --limit 3 given"
    result = run("--tasks", "nq", "--subset", "first:5", "--limit", "3")
    assert result.exception.message == "both --subset first:5 and --limit 3 given"

    # the file says --limit 8: --subset on the command line replaces it, and the manifest records what ran
    first = tmp_path / "first"
    assert run("-c", str(config_file), "--subset", "first:2", "-o", str(first)).exit_code == 0
    recorded = RunDirectory(first).read_manifest().run_config
    assert (recorded["subset"], recorded["limit"]) == ("first:2", None) and len(outcome(first)) == 2
    again = tmp_path / "again"
    assert run("-c", str(first), "--limit", "1", "-o", str(again)).exit_code == 0
    assert outcome(again) == outcome(first)[:1]


def test_a_manifest_without_a_recorded_config_says_so(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"schema_version": 1, "kind": "import", "tasks": ["nq"]}), encoding="utf-8")
    result = run("--config", str(tmp_path))
    assert isinstance(result.exception, EvalsuiteError)
    assert result.exception.message.startswith(f"{manifest}: this run manifest records no run config")


def test_a_merged_sharded_run_repeats_whole_from_its_manifest(tmp_path, config_file):
    shards = [tmp_path / f"shard{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        assert run("-c", str(config_file), "--limit", "5", "--shard", f"{i}/2", "-o", str(shard)).exit_code == 0
    merged = tmp_path / "merged"
    assert CliRunner().invoke(app, ["merge", *map(str, shards), "-o", str(merged)]).exit_code == 0
    assert RunDirectory(merged).read_manifest().run_config["shard"] is None
    whole = tmp_path / "whole"
    assert run("-c", str(merged), "-o", str(whole)).exit_code == 0
    assert len(outcome(whole)) == 5 and outcome(whole) == outcome(merged)
