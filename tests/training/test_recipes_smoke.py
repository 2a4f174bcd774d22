"""Each recipe's CPU smoke config: 2 optimizer steps with the real SmolLM2, non-zero gradients, every reward component
logged, a checkpoint that `evalsuite run --backend hf` evaluates on AD-QA (slow: minutes per recipe on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.rewards import get_reward

REPO = Path(__file__).resolve().parents[2]
RECIPES = ["search-r1", "progress", "subsearch", "search-p1", "oases", "smartsearch"]


def test_configs_load_for_every_recipe_and_record_deviations():
    from evalsuite.training.config import load_config

    for method in RECIPES:
        for name in ("gpu.yaml", "cpu_smoke.yaml"):
            config = load_config(REPO / "train_recipes" / "configs" / method / name, method)
            config.rollout_config()
            assert config.deviations, f"{method}/{name} records no deviation"


@pytest.mark.slow
@pytest.mark.parametrize("method", RECIPES)
def test_recipe_smoke_trains_and_evaluates(method, tmp_path):
    pytest.importorskip("trl")
    runner = CliRunner()
    out = tmp_path / "ckpt"
    result = runner.invoke(app, ["train", method, "--config", str(REPO / "train_recipes" / "configs" / method / "cpu_smoke.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    records = [json.loads(line) for line in (out / "training_log.jsonl").read_text().splitlines()]
    steps = [r for r in records if r["stage"] == "grpo" and "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert any(r["grad_norm"] > 0 for r in steps)
    for component in get_reward(method).components:
        assert all(f"rewards/{method}/{component}/mean" in r for r in steps), component
    assert all("kl" in r and "completions/mean_length" in r and "rewards/n_turns/mean" in r for r in steps)
    manifest = json.loads((out / "train_manifest.json").read_text())
    assert manifest["method"] == method and manifest["deviations"]
    assert (out / "training_curves.png").stat().st_size > 0
    from evalsuite.agent.default import demo_index_dir

    run_dir = tmp_path / "run"
    evaluated = runner.invoke(app, ["run", "--backend", "hf", "--model", str(out / "checkpoint"), "--tasks", "adqa", "--subset", "first:3",
                                    "--retriever", str(demo_index_dir()), "--max-tokens", "16", "-o", str(run_dir)])
    assert evaluated.exit_code == 0, evaluated.output
    assert len((run_dir / "predictions.jsonl").read_text().splitlines()) == 3
