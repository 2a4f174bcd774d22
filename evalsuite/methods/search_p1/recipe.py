"""The search-p1 recipe (0.1 format + 0.3 dual-track path + 0.6 soft outcome).

`python evalsuite/methods/search_p1/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train search-p1 --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through its
hooks; the rollout loop, retriever and reward (`evalsuite.methods.search_p1.reward`) live in evalsuite; the
settings in evalsuite/methods/search_p1/configs/. Paper setting, ours and every deviation: docs/recipes/search-p1.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.methods.search_p1.plans import REFERENCE_PLANS
from evalsuite.training.data import QueryColumn, require_column
from evalsuite.training.recipe import Recipe

METHOD = "search-p1"


@dataclass
class SearchP1Config(TrainConfig):
    """Search-P1's YAML: the shared settings and the reference plans, `evalsuite train search-p1 plans` files (one
    for every task, or a mapping task -> file; none: the rows' gold decompositions)."""

    reference_plans: str | dict[str, str] | None = None


class SearchP1Recipe(Recipe[SearchP1Config]):
    """GRPO whose path reward follows offline reference plans (`evalsuite train search-p1 plans` builds them)."""

    name = METHOD
    evaluator_method = "search-p1"
    summary = "0.1 format + 0.3 dual-track path + 0.6 soft outcome"
    config_class = SearchP1Config
    actions = ("plans",)

    def build_reward(self, config: SearchP1Config) -> MethodReward:
        from evalsuite.training.trainer import query_matcher

        return get_reward(self.name, config.reward.settings, matcher=query_matcher(config))

    def row_columns(self, config: SearchP1Config) -> list[QueryColumn]:
        return [REFERENCE_PLANS]

    def prepare_data(self, config: SearchP1Config, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        require_column(
            config,
            rows,
            "reference_plan",
            "reference plans",
            "evalsuite train search-p1 plans --config CONFIG -o FILE, then reference_plans: FILE",
        )
        return rows

    def run_action(self, action: str, config: SearchP1Config, out: Path | None, options: dict[str, Any]) -> str:
        """`plans`: the reference plans of every training row (options: samples, planner_backend, planner_model)."""
        if action != "plans":
            return super().run_action(action, config, out, options)
        from evalsuite.methods.search_p1.plans import build_plans

        target = out or Path("reference_plans.jsonl")
        summary = build_plans(
            config,
            self.rollout_method(config, {}),
            target,
            options["samples"],
            options["planner_backend"],
            options["planner_model"],
        )
        return (
            f"wrote {summary['rows']} reference plans to {target} ({summary['from_trajectories']} "
            f"distilled from correct trajectories, {summary['from_decomposition']} from the gold "
            f"decomposition, {summary['empty']} empty)"
        )


RECIPE = SearchP1Recipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
