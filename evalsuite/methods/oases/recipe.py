"""The oases recipe (outcome F1 + state-score differences from the policy's own state evaluations).

`python evalsuite/methods/oases/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train oases --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through
its hooks; the rollout loop, retriever and reward (`evalsuite.methods.oases.reward`) live in evalsuite;
the settings in evalsuite/methods/oases/configs/. Paper setting, ours and every deviation: docs/recipes/oases.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError
from evalsuite.methods.oases.reward import OasesReward, OasesRewardConfig
from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.training.recipe import Recipe
from evalsuite.training.rollout import RolloutExtension

METHOD = "oases"


@dataclass
class StateEvalSpec:
    """The state-evaluation answers' budget, their temperature (None: the trainer's) and the weight of their
    co-training loss (0 turns co-training off; the answers still give the state scores)."""

    weight: float = 1.0
    max_tokens: int = 32
    temperature: float | None = None


@dataclass
class OasesConfig(TrainConfig):
    """OASES's YAML: the shared settings and its `state_eval` section."""

    state_eval: StateEvalSpec = field(default_factory=StateEvalSpec)


class OasesRecipe(Recipe[OasesConfig]):
    """GRPO whose rollouts also answer from every search state (the state scores of the process reward); a trainer
    subclass co-trains those answers and credits each turn's process reward to its tokens (`methods.oases.cotrain`)."""

    name = METHOD
    evaluator_method = "oases"
    summary = "outcome F1 + state-score differences from the policy's own state evaluations"
    config_class = OasesConfig

    def build_reward(self, config: OasesConfig) -> MethodReward:
        return get_reward(self.name, config.reward.settings)

    def check_config(self, config: OasesConfig, path: Path) -> None:
        if config.state_eval.weight < 0 or config.state_eval.max_tokens < 1:
            raise DataError(f"{path}: state_eval.weight must be >= 0 and state_eval.max_tokens >= 1")

    def rollout_extension(self, config: OasesConfig, golds: dict[str, list[str]]) -> RolloutExtension:
        from evalsuite.methods.oases.rollout import StateScores

        return StateScores(golds, config.state_eval.max_tokens, config.state_eval.temperature)

    def grpo_trainer(
        self, trl: Any, config: OasesConfig, reward: MethodReward, rollout: Any
    ) -> tuple[type, dict[str, Any]]:
        settings = reward.settings if isinstance(reward, OasesReward) else OasesRewardConfig()
        turn_weight = settings.process_weight if settings.credit == "turn" else 0.0
        if not (config.state_eval.weight or turn_weight):
            return trl.GRPOTrainer, {}
        from evalsuite.methods.oases.cotrain import oases_trainer

        return oases_trainer(trl), {
            "state_scores": rollout.extension,
            "eval_weight": config.state_eval.weight,
            "turn_weight": turn_weight,
        }


RECIPE = OasesRecipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
