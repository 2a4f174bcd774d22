"""Each recipe's CPU smoke config: 2 optimizer steps with the real SmolLM2, non-zero gradients, every reward component
logged, a checkpoint that `evalsuite run --backend hf` evaluates on AD-QA (slow: minutes per recipe on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.registry import packaged_parts
from evalsuite.rewards import get_reward
from evalsuite.resources import method_configs_dir, training_configs_dir

REPO = Path(__file__).resolve().parents[2]
# every shipped recipe, read from the method packages (a new one is smoke-tested without editing this file)
RECIPES = [name for name, _ in packaged_parts("recipe")]


def test_configs_load_for_every_recipe_and_record_deviations():
    from evalsuite.training.config import load_config

    for method in RECIPES:
        for name in ("gpu.yaml", "cpu_smoke.yaml"):
            config = load_config(method_configs_dir(method) / name, method)
            config.rollout_config()
            assert config.deviations, f"{method}/{name} records no deviation"
            for named in (config.reward.panel, getattr(config, "reference_plans", None), getattr(config, "teacher_queries", None)):
                assert named is None or Path(named).is_file(), f"{method}/{name} names a missing file {named}"


@pytest.mark.parametrize("method", RECIPES)
def test_gpu_configs_batch_the_papers_prompts_as_trl_requires(method):
    """TRL counts completions: each generation must hold whole groups, and a generation must be the paper's batch of
    prompts × our rollouts per prompt (Search-R1's train_grpo.sh: 512 prompts × 5, updated in 2 mini-batches of 256
    prompts); where our rollouts per prompt differ from the paper's, that is a listed deviation."""
    import yaml

    from evalsuite.training.config import load_config
    from evalsuite.training.paper_deviations import deviations

    config = load_config(method_configs_dir(method) / "gpu.yaml", method)
    processes = yaml.safe_load((training_configs_dir() / "accelerate_zero3.yaml").read_text())["num_processes"]
    assert config.accelerate["num_processes"] == processes
    grpo, paper = config.grpo, {name: entry["value"] for name, entry in config.paper.items()}
    per_update = processes * grpo["per_device_train_batch_size"] * grpo["gradient_accumulation_steps"]
    per_generation = processes * grpo["per_device_train_batch_size"] * grpo.get("steps_per_generation", grpo["gradient_accumulation_steps"])
    if grpo["num_generations"] != paper["rollouts_per_prompt"]:
        assert any(d.startswith("rollouts_per_prompt: ours") for d in deviations(config))
    assert per_update % grpo["num_generations"] == 0 and per_generation % per_update == 0
    assert per_generation == paper["batch_size"] * grpo["num_generations"]
    assert grpo["max_steps"] == paper["steps"] * per_generation // per_update


@pytest.mark.parametrize("name", ["gpu.yaml", "cpu_smoke.yaml"])
@pytest.mark.parametrize("method", RECIPES)
def test_every_trl_section_is_accepted_by_the_installed_trl(method, name, tmp_path):
    """The YAML's grpo/sft/dpo mappings go verbatim to TRL's config classes: a renamed option must fail here, not
    minutes into a GPU job (transformers 5 dropped `warmup_ratio`, for one)."""
    trl = pytest.importorskip("trl")
    from evalsuite.training.config import load_config

    config = load_config(method_configs_dir(method) / name, method)
    on_cpu = {"use_cpu": True, "bf16": False, "output_dir": str(tmp_path)}  # this machine has no GPU to check bf16 on
    trl.GRPOConfig(**{**config.grpo, **on_cpu})
    if config.sft is not None:
        trl.SFTConfig(**{**config.sft, **on_cpu})
    if config.dpo is not None:
        trl.DPOConfig(**{**config.dpo, **on_cpu})


@pytest.mark.slow
@pytest.mark.parametrize("method", RECIPES)
def test_recipe_smoke_trains_and_evaluates(method, tmp_path):
    pytest.importorskip("trl")
    runner = CliRunner()
    out = tmp_path / "ckpt"
    result = runner.invoke(app, ["train", method, "--config", str(method_configs_dir(method) / "cpu_smoke.yaml"), "-o", str(out)])
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
    if method == "oases":  # the state-evaluation answers are co-trained
        assert all(r["oases/eval_samples"] >= 4 and "oases/eval_loss" in r for r in steps)
    if method == "smartsearch":  # SFT and DPO ran before GRPO, whose groups had refine slots
        stages = manifest["stages"]
        assert stages["sft"]["steps"] == 1 and stages["dpo"]["steps"] == 1, stages
        assert all("rewards/refined/mean" in r for r in steps)
        assert {"sft", "dpo"} <= {r["stage"] for r in records}
    assert (out / "training_curves.png").stat().st_size > 0
    run_dir = tmp_path / "run"
    evaluated = runner.invoke(app, ["run", "--backend", "hf", "--model", str(out / "checkpoint"), "--tasks", "adqa", "--subset", "first:3",
                                    "--retriever", "adqa", "--max-tokens", "16", "-o", str(run_dir)])
    assert evaluated.exit_code == 0, evaluated.output
    assert len((run_dir / "predictions.jsonl").read_text().splitlines()) == 3
