"""The subsearch recipe (EM with answerability/decomposition process rewards, adaptive-residual aggregation).

`python evalsuite/methods/subsearch/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train subsearch --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through its
hooks; the rollout loop, retriever and reward (`evalsuite.methods.subsearch.reward`) live in evalsuite; the
settings in evalsuite/methods/subsearch/configs/. Paper setting, ours and every deviation: docs/recipes/subsearch.md.
"""

from __future__ import annotations

from typing import Any

from evalsuite.rewards import MethodReward, get_reward
from evalsuite.methods.subsearch.reward import NEEDS_DECOMPOSITION
from evalsuite.tasks.registry import get_task
from evalsuite.training.config import TrainConfig
from evalsuite.training.distributed import sum_across_processes
from evalsuite.training.recipe import Recipe

METHOD = "subsearch"


class SubSearchRecipe(Recipe[TrainConfig]):
    """Plain GRPO with the subsearch reward, playing the subsearch protocol."""

    name = METHOD
    evaluator_method = "subsearch"
    summary = "EM with answerability/decomposition process rewards, adaptive-residual aggregation"

    def build_reward(self, config: TrainConfig) -> MethodReward:
        # the EMA of accuracy that sets β is summed over accelerate's processes, so they all train with one β
        return get_reward(self.name, config.reward.settings, reduce_sum=sum_across_processes)

    def prepare_data(self, config: TrainConfig, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each row says whether its question needs splitting (`needs_decomposition`), which the reward reads."""
        return [{**row, NEEDS_DECOMPOSITION: needs_decomposition(row)} for row in rows]


def needs_decomposition(row: dict[str, Any]) -> bool:
    """A question has several parts when its task is a multi-hop benchmark (HotpotQA, 2Wiki, MuSiQue, Bamboogle, AD-QA)
    or the row carries a gold decomposition of two or more steps; NQ, TriviaQA and PopQA questions are single-hop. A
    dataset label, not the paper's intrinsic signal (a labelled deviation in its configs/gpu.yaml)."""
    task = str(row.get("id", "")).partition(":")[0]
    return get_task(task).category == "multi-hop" or len(row.get("teacher_queries") or []) >= 2


RECIPE = SubSearchRecipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
