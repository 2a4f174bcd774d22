"""The subsearch recipe (EM with answerability/decomposition process rewards, adaptive-residual aggregation).

`python train_recipes/subsearch.py [--config FILE] [-o CKPT]` is `evalsuite train subsearch --config FILE -o CKPT`: `RECIPE` below
is the recipe the shared trainer (`evalsuite.training.trainer`) runs through its hooks; the rollout loop, retriever and
reward (`evalsuite.rewards.subsearch`) live in evalsuite; the settings in configs/subsearch/.
Paper setting, ours and every deviation: docs/recipes/subsearch.md.
"""

from __future__ import annotations

from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.training.recipe import Recipe

METHOD = "subsearch"


class SubSearchRecipe(Recipe):
    """Plain GRPO with the subsearch reward, playing the subsearch protocol."""

    name = METHOD
    protocol = "subsearch"
    summary = "EM with answerability/decomposition process rewards, adaptive-residual aggregation"

    def build_reward(self, config: TrainConfig) -> MethodReward:
        return get_reward(self.name, config.reward.settings)


RECIPE = SubSearchRecipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
