"""The progress recipe (EM + format + 0.2 x coverage F1 of policy vs teacher queries).

`python evalsuite/methods/progress/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train progress --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through
its hooks; the rollout loop, retriever and reward (`evalsuite.methods.progress.reward`) live in evalsuite;
the settings in evalsuite/methods/progress/configs/. Paper setting, ours and every deviation: docs/recipes/progress.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.training.data import QueryColumn, require_column
from evalsuite.training.recipe import Recipe

METHOD = "progress"


@dataclass
class ProgressConfig(TrainConfig):
    """Progress's YAML: the shared settings and the teacher queries, `evalsuite teacher-queries` files (one for every
    task, or a mapping task -> file; none: the rows' gold decompositions)."""

    teacher_queries: str | dict[str, str] | None = None


class ProgressRecipe(Recipe[ProgressConfig]):
    """GRPO on Search-R1's protocol; the reward compares the policy's queries with a teacher's (lexical or judge)."""

    name = METHOD
    evaluator_method = "search-r1"
    summary = "EM + format + 0.2 x coverage F1 of policy vs teacher queries"
    config_class = ProgressConfig

    def build_reward(self, config: ProgressConfig) -> MethodReward:
        from evalsuite.training.trainer import query_matcher

        return get_reward(self.name, config.reward.settings, matcher=query_matcher(config))

    def row_columns(self, config: ProgressConfig) -> list[QueryColumn]:
        return [QueryColumn("teacher_queries", "teacher_queries", "teacher_queries")]

    def prepare_data(self, config: ProgressConfig, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        require_column(
            config,
            rows,
            "teacher_queries",
            "teacher queries",
            "evalsuite teacher-queries --task TASK --split train "
            "--panel PANEL.yaml -o FILE, then teacher_queries: FILE",
        )
        return rows


RECIPE = ProgressRecipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
