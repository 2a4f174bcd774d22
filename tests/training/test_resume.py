"""A stopped training run continues where it stopped (`evalsuite train ... --resume`), and a finished or stopped run
is never overwritten by accident."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.training.config import load_config
from evalsuite.training.trainer import train
from evalsuite.resources import method_configs_dir
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]
SMOKE = method_configs_dir("search-r1") / "cpu_smoke.yaml"


@requires_extra("train", "torch", "trl", "transformers", "datasets", "accelerate")
def test_an_existing_run_is_not_overwritten_and_an_empty_one_not_resumed(tmp_path):
    config = load_config(SMOKE)
    (tmp_path / "train_manifest.json").write_text("{}")
    with pytest.raises(EvalsuiteError, match="already holds a training run"):
        train(config, tmp_path)
    with pytest.raises(EvalsuiteError, match="nothing to resume"):
        train(config, tmp_path / "empty", resume=True)


@pytest.mark.slow
def test_a_stopped_run_resumes_from_its_last_checkpoint(tmp_path):
    pytest.importorskip("trl")
    base = load_config(SMOKE)
    saving = {**base.grpo, "save_strategy": "steps", "save_steps": 1}
    first = train(dataclasses.replace(base, grpo={**saving, "max_steps": 1}), tmp_path)  # "stopped" after step 1
    assert (tmp_path / "trl" / "checkpoint-1").is_dir() and len(first.seconds_per_step) == 1
    second = train(dataclasses.replace(base, grpo={**saving, "max_steps": 2}), tmp_path, resume=True)
    steps = [json.loads(line) for line in second.log.read_text().splitlines()]
    assert [r["step"] for r in steps if r["stage"] == "grpo" and "loss" in r] == [1, 2]  # the log kept step 1
    manifest = json.loads(second.manifest.read_text())
    assert manifest["stages"]["grpo"]["steps"] == 2 and manifest["stages"]["grpo"]["resumed_from"].endswith("checkpoint-1")
