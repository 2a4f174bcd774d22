"""`evalsuite reproduce` before any long stage: the config's data, the stage records and the checkpoint are checked in
seconds, and each bad input is one `error:` line (exit 2) that names what is wrong. The stages themselves run in
tests/reproduce/test_reproduce_cpu.py (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.reproduce import RECORD, STAGES, plan, write_record
from tests.conftest import requires_extra

# the distributions of the [train] extra, and torch: the train stage is ready only with all of them
TRAIN_EXTRA = requires_extra("train", "torch", "trl", "transformers", "datasets", "accelerate", "matplotlib", "gguf")

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "evalsuite" / "methods"


def config_file(tmp_path: Path, **reproduce) -> Path:
    """The shipped search-r1 cpu_learn config with its reproduce section changed (paper: points at the shipped gpu.yaml)."""
    raw = yaml.safe_load((CONFIGS / "search_r1" / "configs" / "cpu_learn.yaml").read_text())
    raw["reproduce"] = {**raw["reproduce"], **reproduce}
    raw["paper"] = str(CONFIGS / "search_r1" / "configs" / "gpu.yaml")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def finish(repro, name: str, output: str, text: str = "x") -> None:
    """Mark a stage finished as `run` would: its output file and a complete record of its planned inputs."""
    stage = repro.stages[name]
    (stage.path / output).parent.mkdir(parents=True, exist_ok=True)
    (stage.path / output).write_text(text)
    write_record(stage, complete=True)


def test_every_shipped_config_has_a_reproduce_section_that_loads():
    from evalsuite.reproduce import ReproduceSettings
    from evalsuite.training.config import load_config

    for method_dir in sorted(p.parent.parent for p in CONFIGS.glob("*/configs/gpu.yaml")):
        method = method_dir.name.replace("_", "-")
        for name in ("gpu.yaml", "cpu_smoke.yaml"):
            config = load_config(method_dir / "configs" / name, method)
            settings = ReproduceSettings.from_config(config.reproduce, name)
            assert config.reproduce, f"{method}/{name} has no reproduce section"
            assert settings.metrics and settings.benchmarks


@TRAIN_EXTRA
def test_a_fresh_directory_plans_every_stage_and_the_dry_run_runs_nothing(tmp_path):
    out = tmp_path / "repro"
    result = CliRunner().invoke(app, ["reproduce", "search-r1", "--config", str(config_file(tmp_path)), "-o", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert [line.split(":")[1].strip() for line in result.output.splitlines() if line.startswith("plan:")] == list(STAGES)
    assert not out.exists()


def test_a_benchmark_whose_data_is_missing_is_refused_in_one_line(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EVALSUITE_DATA_DIR", raising=False)
    config = config_file(tmp_path, benchmarks="adqa,musique", data_dir=str(empty))
    with pytest.raises(EvalsuiteError, match=r"reproduce.benchmarks names musique \(split test\), whose data is not here") as caught:
        plan("search-r1", config, tmp_path / "repro")
    assert "\n" not in caught.value.message and "evalsuite data download --tasks musique" in caught.value.hint


def test_a_config_without_a_reproduce_section_is_refused(tmp_path):
    raw = yaml.safe_load(config_file(tmp_path).read_text())
    del raw["reproduce"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(EvalsuiteError, match="no reproduce: section"):
        plan("search-r1", tmp_path / "config.yaml", tmp_path / "repro")


def test_unknown_reproduce_keys_and_rollout_settings_are_refused(tmp_path):
    with pytest.raises(EvalsuiteError, match=r"unknown reproduce keys \['benchmark'\]"):
        plan("search-r1", config_file(tmp_path, benchmark="adqa"), tmp_path / "repro")
    with pytest.raises(EvalsuiteError, match=r"unknown reproduce.rollout settings \['max_turn'\]"):
        plan("search-r1", config_file(tmp_path, rollout={"max_turn": 2}), tmp_path / "repro")


def test_a_finished_stage_is_skipped(tmp_path):
    config, out = config_file(tmp_path), tmp_path / "repro"
    first = plan("search-r1", config, out)
    finish(first, "eval-base", "predictions.jsonl")
    again = plan("search-r1", config, out)
    assert [again.stages[s].action for s in STAGES] == ["run", "skip", "run", "run", "run"]


def test_a_stopped_stage_with_unchanged_inputs_resumes(tmp_path):
    config, out = config_file(tmp_path), tmp_path / "repro"
    first = plan("search-r1", config, out)
    write_record(first.stages["eval-base"], complete=False)
    assert plan("search-r1", config, out).stages["eval-base"].action == "resume"


def test_a_changed_input_is_refused_naming_it_and_rerun_replaces_the_stage(tmp_path):
    out = tmp_path / "repro"
    first = plan("search-r1", config_file(tmp_path), out)
    finish(first, "eval-base", "predictions.jsonl")
    changed = config_file(tmp_path, subset="first:8")  # other questions: the base evaluation is stale
    with pytest.raises(EvalsuiteError, match="^stage eval-base: evaluation settings changed since") as caught:
        CliRunner().invoke(app, ["reproduce", "search-r1", "--config", str(changed), "-o", str(out), "--dry-run"], catch_exceptions=False)
    assert "\n" not in caught.value.message and "--rerun" in caught.value.hint
    rerun = plan("search-r1", changed, out, rerun=True)
    assert rerun.stages["eval-base"].action == "run" and "evaluation settings changed" in rerun.stages["eval-base"].why


@TRAIN_EXTRA
def test_training_settings_decide_the_training_stage_and_the_reproduce_section_does_not(tmp_path):
    out = tmp_path / "repro"
    first = plan("search-r1", config_file(tmp_path), out)
    finish(first, "train", "train_manifest.json")
    (out / "train" / "checkpoint").mkdir()
    with pytest.raises(EvalsuiteError, match="cannot be loaded for evaluation"):  # a finished train stage's checkpoint is checked
        plan("search-r1", config_file(tmp_path, subset="first:8"), out)
    raw = yaml.safe_load(config_file(tmp_path).read_text())
    raw["grpo"]["learning_rate"] = 1.0e-6
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(EvalsuiteError, match="stage train: training settings changed"):
        plan("search-r1", tmp_path / "config.yaml", out)


@requires_extra("hf", "transformers")  # what loads the checkpoint
def test_a_checkpoint_that_cannot_be_loaded_is_refused_before_evaluating(tmp_path):
    out = tmp_path / "repro"
    first = plan("search-r1", config_file(tmp_path), out)
    finish(first, "train", "train_manifest.json")
    checkpoint = out / "train" / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{not json")
    with pytest.raises(EvalsuiteError, match="cannot be loaded for evaluation") as caught:
        CliRunner().invoke(app, ["reproduce", "search-r1", "--config", str(config_file(tmp_path)), "-o", str(out), "--dry-run"], catch_exceptions=False)
    assert caught.value.message.startswith(f"the checkpoint {checkpoint} cannot be loaded") and "\n" not in caught.value.message


def test_a_directory_without_a_stage_record_is_not_trusted(tmp_path):
    out = tmp_path / "repro"
    (out / "eval-base").mkdir(parents=True)
    (out / "eval-base" / "predictions.jsonl").write_text("{}\n")
    with pytest.raises(EvalsuiteError, match="holds no stage record"):
        plan("search-r1", config_file(tmp_path), out)
    assert plan("search-r1", config_file(tmp_path), out, rerun=True).stages["eval-base"].action == "run"


def test_from_reruns_a_stage_and_every_later_one(tmp_path):
    config, out = config_file(tmp_path), tmp_path / "repro"
    first = plan("search-r1", config, out)
    finish(first, "eval-base", "predictions.jsonl")
    assert plan("search-r1", config, out).stages["eval-base"].action == "skip"
    forced = plan("search-r1", config, out, rerun_from="eval-base")
    assert [forced.stages[s].action for s in STAGES[1:]] == ["run"] * 4
    record = json.loads((out / "eval-base" / RECORD).read_text())
    assert record["complete"] and set(record["inputs"]) == {"evaluation settings", "base model"}
