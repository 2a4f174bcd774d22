"""The recipe registry: the shipped recipes are found in their method packages, the shared trainer names none of them, and a
recipe defined here, in a scratch registry (its reward, its config section, an SFT stage before GRPO), is listed,
dry-run and trained by `evalsuite train` without editing any other file."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.rewards import MethodReward
from evalsuite.rewards.base import Sample
from evalsuite.training.config import TrainConfig, load_config
from evalsuite.training.recipe import Recipe, RecipeRegistry, default_registry, using_registry
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]
# the evaluator method each shipped recipe plays (the trainer's former PROTOCOL table)
SHIPPED = {"search-r1": "search-r1", "progress": "search-r1", "subsearch": "subsearch", "search-p1": "search-p1", "oases": "oases",
           "smartsearch": "smartsearch"}
# the shared trainer: no module here may name a recipe
SHARED = [str(p.relative_to(REPO)) for p in sorted((REPO / "evalsuite" / "training").glob("*.py"))] + ["evalsuite/cli/train.py"]


# --- the scratch recipe: everything a new method needs, in this file -------------------------------------------------


class BrevityReward(MethodReward):
    """Fewer words of the model's own (retrieved text excluded) is better: brevity = 1 − min(words, max_words) /
    max_words; the total is brevity."""

    name = "echo"
    components = ("brevity",)

    def __init__(self, max_words: int) -> None:
        super().__init__()
        self.max_words = max_words

    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        out = []
        for sample in batch:
            brevity = 1.0 - min(len(sample.model_text.split()), self.max_words) / self.max_words
            out.append({"brevity": brevity, "total": brevity})
        return out

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "max_words": self.max_words}


@dataclass
class EchoSpec:
    """The recipe's own section: the reward's word budget and how many rows the SFT warm-up copies answers from."""

    max_words: int = 32
    warmup_rows: int = 2


@dataclass
class EchoConfig(TrainConfig):
    echo: EchoSpec = field(default_factory=EchoSpec)


class EchoRecipe(Recipe):
    """SFT on `<answer> gold </answer>` completions, then GRPO on Search-R1's method with the brevity reward."""

    name = "echo"
    evaluator_method = "search-r1"
    summary = "brevity (a test recipe)"
    config_class = EchoConfig
    stages = ("sft", "grpo")

    def build_reward(self, config: EchoConfig) -> MethodReward:
        return BrevityReward(config.echo.max_words)

    def check_config(self, config: EchoConfig, path: Path) -> None:
        if config.echo.max_words < 1:
            raise DataError(f"{path}: echo.max_words must be >= 1")

    def curriculum(self, config: EchoConfig, model_path: str, out: Path, rows: list[dict[str, Any]], reward: MethodReward) -> tuple[str, dict[str, Any]]:
        from evalsuite.training.stages import run_stage

        warmup = [{"prompt": r["question"], "completion": f" <answer> {r['golden_answers'][0]} </answer>"} for r in rows[: config.echo.warmup_rows]]
        model, steps = run_stage(config, "sft", config.sft, warmup, model_path, out)
        return model, {"sft": {"steps": steps, "rows": len(warmup)}}

    def finished_curriculum(self, config: EchoConfig, out: Path) -> str | None:
        from evalsuite.training.stages import finished_stage

        return finished_stage(out, "sft")


ECHO_YAML = """\
method: echo
model: smollm2-135m
tasks: adqa
split: train
subset: first:2
retriever: adqa
rollout: {max_turns: 1, max_tokens: 16, max_obs_tokens: 48, topk: 2, max_context_tokens: 2048}
echo: {max_words: 24, warmup_rows: 2}
smoke_overlap_weight: 0.5
sft: {max_steps: 1, per_device_train_batch_size: 2, learning_rate: 1.0e-5, use_cpu: true, bf16: false}
grpo: {max_steps: 1, per_device_train_batch_size: 4, num_generations: 2, learning_rate: 1.0e-5, beta: 0.001, temperature: 1.0,
       use_cpu: true, bf16: false, seed: 0}
paper:
  echo.max_words: {value: 32, assumed: "a test recipe: the paper's budget is made up"}
deviations: ['a test recipe']
"""


@pytest.fixture
def scratch() -> RecipeRegistry:
    """The shipped recipes plus echo, in a registry of the test's own."""
    registry = default_registry().copy()
    registry.add(EchoRecipe())
    return registry


def echo_config(tmp_path: Path, text: str = ECHO_YAML) -> Path:
    path = tmp_path / "echo.yaml"
    path.write_text(text)
    return path


# --- fast: the registry, the schema, --list and --dry-run ----------------------------------------------------------


def test_the_shipped_recipes_are_found_in_their_method_packages_with_their_evaluator_methods():
    registry = default_registry()
    assert {r.name: r.evaluator_method for r in registry} == SHIPPED
    for module in (REPO / "evalsuite" / "methods").glob("*/recipe.py"):
        text = module.read_text()
        assert "\nRECIPE = " in text, f"{module} registers no RECIPE"
        assert type(registry.get(text.split('METHOD = "')[1].split('"')[0])).__module__ == f"evalsuite.methods.{module.parent.name}.recipe"


def test_the_shared_trainer_names_no_recipe_and_does_not_import_the_curriculum():
    names = set(SHIPPED)
    for relative in SHARED:
        tree = ast.parse((REPO / relative).read_text())
        literals = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        assert not literals & names, f"{relative} names the recipes {sorted(literals & names)}"
    imports = {relative: {node.module for node in ast.walk(ast.parse((REPO / relative).read_text())) if isinstance(node, ast.ImportFrom)}
               for relative in ("evalsuite/training/trainer.py", "evalsuite/methods/smartsearch/curriculum.py")}
    assert "evalsuite.methods.smartsearch.curriculum" not in imports["evalsuite/training/trainer.py"]
    assert "evalsuite.training.trainer" not in imports["evalsuite/methods/smartsearch/curriculum.py"]


def test_a_scratch_recipe_loads_its_own_schema_and_stays_out_of_the_default_registry(tmp_path, scratch):
    path = echo_config(tmp_path)
    config = load_config(path, "echo", registry=scratch)
    assert isinstance(config, EchoConfig) and config.echo == EchoSpec(max_words=24, warmup_rows=2)
    with pytest.raises(DataError, match="'echo' is not a recipe"):
        load_config(path)  # the shipped registry does not know it
    with pytest.raises(DataError, match=r"unknown echo keys \['max_word'\]"):
        load_config(echo_config(tmp_path, ECHO_YAML.replace("max_words: 24", "max_word: 24")), registry=scratch)
    with pytest.raises(DataError, match="echo.max_words must be >= 1"):
        load_config(echo_config(tmp_path, ECHO_YAML.replace("max_words: 24", "max_words: 0")), registry=scratch)
    with pytest.raises(DataError, match="echo is a setting of the echo recipe; search-r1 does not take it"):
        load_config(echo_config(tmp_path, ECHO_YAML.replace("method: echo", "method: search-r1")), registry=scratch)
    with pytest.raises(EvalsuiteError, match="recipe 'echo' is already registered"):
        scratch.add(EchoRecipe())


def test_the_brevity_reward_on_hand_computed_cases():
    reward = BrevityReward(max_words=4)
    # 0 words: 1; 2 words: 1 − 2/4 = 0.5; 6 words (capped at 4): 0
    golds = [["x"]] * 3
    assert reward(["", "two words", "one two three four five six"], golden_answers=golds) == [1.0, 0.5, 0.0]


@requires_extra("train", "torch", "trl", "transformers", "datasets", "accelerate")
def test_list_and_dry_run_go_through_the_active_registry(tmp_path, scratch):
    runner = CliRunner()
    with using_registry(scratch):
        listed = runner.invoke(app, ["train", "--list"])
        dry = runner.invoke(app, ["train", "echo", "--config", str(echo_config(tmp_path)), "--dry-run", "-o", str(tmp_path / "ckpt")])
    assert listed.exit_code == 0, listed.output
    echo_row = next(line for line in listed.output.splitlines() if line.startswith("| echo "))
    assert "search-r1" in echo_row and "sft -> grpo" in echo_row and "brevity (a test recipe)" in echo_row
    assert all(f"| {name} " in listed.output for name in SHIPPED)
    assert dry.exit_code == 0, dry.output + repr(dry.exception)
    assert "reward echo and TRL configs sft (SFTConfig), grpo (GRPOConfig) built" in dry.output
    assert "echo.max_words" in dry.output  # the paper block reaches into the recipe's own section
    assert not (tmp_path / "ckpt").exists()
    outside = runner.invoke(app, ["train", "--list"])
    assert "| echo " not in outside.output


def test_a_recipe_script_still_runs_as_a_script():
    result = subprocess.run([sys.executable, "-m", "evalsuite.methods.search_r1.recipe", "--help"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "the search-r1 training recipe" in result.stdout


# --- slow: one CPU-smoke run of the scratch recipe through the shared trainer ---------------------------------------


@pytest.mark.slow
def test_a_scratch_recipe_trains_through_the_shared_trainer(tmp_path, scratch):
    """SFT warm-up (the recipe's stage) then one GRPO step with the real SmolLM2, the recipe's reward logged."""
    pytest.importorskip("trl")
    out = tmp_path / "ckpt"
    with using_registry(scratch):
        result = CliRunner().invoke(app, ["train", "echo", "--config", str(echo_config(tmp_path)), "-o", str(out)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    records = [json.loads(line) for line in (out / "training_log.jsonl").read_text().splitlines()]
    assert any(r["stage"] == "sft" and "loss" in r for r in records)
    steps = [r for r in records if r["stage"] == "grpo" and "loss" in r]
    assert [r["step"] for r in steps] == [1] and steps[0]["grad_norm"] > 0
    assert "rewards/echo/brevity/mean" in steps[0] and "rewards/echo/total/mean" in steps[0]
    assert 0.0 <= steps[0]["rewards/echo/brevity/mean"] <= 1.0
    manifest = json.loads((out / "train_manifest.json").read_text())
    assert manifest["method"] == "echo" and manifest["evaluator_method"] == "search-r1"
    assert manifest["reward"] == {"name": "echo", "max_words": 24}
    assert manifest["config"]["echo"] == {"max_words": 24, "warmup_rows": 2}
    assert manifest["stages"]["sft"] == {"steps": 1, "rows": 2} and manifest["stages"]["grpo"]["steps"] == 1
    assert manifest["paper"]["echo.max_words"]["ours"] == 24
    assert (out / "sft" / "model" / "config.json").is_file() and (out / "checkpoint" / "config.json").is_file()
