"""The search-r1 recipe (EM on the response's answer (+ optional format/retrieval shaping)).

`python evalsuite/methods/search_r1/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train search-r1 --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through its
hooks; the rollout loop, retriever and reward (`evalsuite.methods.search_r1.reward`) live in evalsuite; the
settings in configs/search-r1/. Paper setting, ours and every deviation: docs/recipes/search-r1.md.
"""

from __future__ import annotations

from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.training.recipe import Recipe

METHOD = "search-r1"


class SearchR1Recipe(Recipe[TrainConfig]):
    """Plain GRPO with the search-r1 reward, playing the search-r1 protocol."""

    name = METHOD
    evaluator_method = "search-r1"
    summary = "EM on the response's answer (+ optional format/retrieval shaping)"

    def build_reward(self, config: TrainConfig) -> MethodReward:
        return get_reward(self.name, config.reward.settings)


RECIPE = SearchR1Recipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
