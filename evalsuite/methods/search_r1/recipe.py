"""The search-r1 recipe (EM on the response's answer (+ optional format/retrieval shaping)).

`python evalsuite/methods/search_r1/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train search-r1 --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through its
hooks; the rollout loop, retriever and reward (`evalsuite.methods.search_r1.reward`) live in evalsuite; the
settings in evalsuite/methods/search_r1/configs/. Paper setting, ours and every deviation: docs/recipes/search-r1.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsuite.agent.method import Method
from evalsuite.errors import DataError
from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.training.recipe import Recipe

METHOD = "search-r1"
# methods whose rollouts the search-r1 reward can score: its answer only (EM of the extracted answer)
ROLLOUT_METHODS = ("search-r1", "naive-rag")


@dataclass
class SearchR1Config(TrainConfig):
    """Search-R1's YAML: the shared settings and which evaluator method the rollouts play. `naive-rag` is retrieval
    before answering (the question's top-k in the prompt, one answer turn, the first line is the answer): for a model
    that does not follow the search protocol, labelled as such (it is not the Search-R1 loop)."""

    rollout_method: str = "search-r1"


class SearchR1Recipe(Recipe[SearchR1Config]):
    """Plain GRPO with the search-r1 reward, playing the search-r1 protocol (or retrieval before answering)."""

    name = METHOD
    evaluator_method = "search-r1"
    summary = "EM on the response's answer (+ optional format/retrieval shaping)"
    config_class = SearchR1Config

    def build_reward(self, config: SearchR1Config) -> MethodReward:
        reward = get_reward(self.name, config.reward.settings)
        # naive-rag writes no <answer> tags: EM is of the answer that method extracts (its first line)
        reward.answer_from_turns = config.rollout_method != "search-r1"  # type: ignore[attr-defined]
        return reward

    def check_config(self, config: SearchR1Config, path: Path) -> None:
        if config.rollout_method not in ROLLOUT_METHODS:
            raise DataError(
                f"{path}: rollout_method {config.rollout_method!r} is not one the search-r1 reward scores",
                hint=f"one of: {', '.join(ROLLOUT_METHODS)}",
            )

    def played_method(self, config: SearchR1Config) -> str:
        return config.rollout_method

    def rollout_method(self, config: SearchR1Config, golds: dict[str, list[str]]) -> Method:
        from evalsuite.agent.method import get_method

        return get_method(self.played_method(config))


RECIPE = SearchR1Recipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
