"""`evalsuite reproduce --dry-run` checks each stage's requirements (extras, model, data, retriever, disk) and prints
the plan (commands, outputs, a time estimate) as text and as `--json`; a missing requirement is refused in one line,
by the dry run and by the real run before its first stage starts."""

from __future__ import annotations

import json
import shlex
import time

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.reproduce import STAGES
from tests.reproduce.test_reproduce_plan import config_file
from tests.conftest import requires_extra

# the distributions of the [train] extra, and torch: the train stage is ready only with all of them
TRAIN_EXTRA = requires_extra("train", "torch", "trl", "transformers", "datasets", "accelerate", "matplotlib", "gguf")


def reproduce(*args):
    return CliRunner().invoke(app, ["reproduce", "search-r1", *map(str, args)])


@TRAIN_EXTRA
def test_the_dry_run_json_is_the_plan_with_commands_outputs_and_the_measured_estimate(tmp_path):
    out = tmp_path / "repro"
    result = reproduce("--config", config_file(tmp_path), "-o", out, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert [s["name"] for s in plan["stages"]] == list(STAGES) and plan["ready"] is True
    stages = {s["name"]: s for s in plan["stages"]}
    assert stages["train"]["command"] == f"evalsuite train search-r1 --config {tmp_path / 'config.yaml'} -o {out / 'train'}"
    trained = shlex.split(stages["eval-trained"]["command"])
    assert trained[:2] == ["evalsuite", "run"] and trained[trained.index("--model") + 1] == str(out / "train" / "checkpoint")
    assert trained[trained.index("--subset") + 1] == "first:128" and trained[-1] == str(out / "eval-trained")
    assert stages["eval-base"]["output"] == str(out / "eval-base" / "predictions.jsonl")
    # cpu_learn is the measured run itself: 16 steps x 12 rollouts x 24 tokens took 3,789.6 s, 128 questions 363.8 s
    assert stages["train"]["estimate_s"] == pytest.approx(3789.6)
    assert stages["eval-base"]["estimate_s"] == pytest.approx(363.8)
    assert plan["estimate_s"] == pytest.approx(3789.6 + 2 * 363.8 + 10)
    assert {r["what"].split(" ")[0] for r in stages["train"]["requirements"]} >= {"extra", "model", "retriever", "disk"}
    assert not out.exists()


@TRAIN_EXTRA
def test_the_dry_run_text_names_each_stage_its_command_and_its_time(tmp_path):
    result = reproduce("--config", config_file(tmp_path), "-o", tmp_path / "repro", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(":")[1].strip() for line in lines if line.startswith("plan:")] == list(STAGES)
    assert "  command:  evalsuite train search-r1 --config" in result.stdout
    assert "  time:     about 63 min" in lines  # 3,789.6 s
    assert lines[-1].startswith("total time: about 75 min;")


@TRAIN_EXTRA
@pytest.mark.parametrize("dry", [True, False])
def test_a_missing_extra_and_a_dead_retriever_are_named_before_anything_runs(tmp_path, dry):
    # vLLM is not installed in the test environment (it has a venv of its own), and nothing listens on port 9
    config = config_file(tmp_path, backend="vllm", retriever="http://127.0.0.1:9/retrieve")
    out = tmp_path / "repro"
    started = time.monotonic()
    result = reproduce("--config", config, "-o", out, *(["--dry-run"] if dry else []))
    # CliRunner calls the command, not main(), which turns the error into `error:` / `hint:` lines and exit 2
    assert isinstance(result.exception, EvalsuiteError), result.output
    message = result.exception.message
    assert message.startswith("4 requirement(s) of the reproduction missing: eval-base: extra [vllm] (the vllm backend) (vllm missing);")
    assert "eval-base: retriever http://127.0.0.1:9/retrieve (no server answers (Connection refused))" in message
    assert result.exception.hint == 'pip install "evalsuite[vllm]"'
    if dry:
        assert "  MISSING   extra [vllm] (the vllm backend): vllm missing" in result.stdout
    assert not out.exists() and time.monotonic() - started < 60


def test_the_dry_run_json_says_not_ready_and_names_the_missing_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    config = config_file(tmp_path)
    text = config.read_text().replace("model: gemma3-270m", "model: nobody/no-such-model")
    config.write_text(text)
    result = reproduce("--config", config, "-o", tmp_path / "repro", "--dry-run", "--json")
    assert isinstance(result.exception, EvalsuiteError), result.output
    plan = json.loads(result.stdout)
    assert plan["ready"] is False
    train = next(s for s in plan["stages"] if s["name"] == "train")
    model = next(r for r in train["requirements"] if r["what"] == "model nobody/no-such-model")
    assert model["ok"] is False and model["detail"] == "not in the Hugging Face cache, and the hub cannot be reached (HF_HUB_OFFLINE is set)"
