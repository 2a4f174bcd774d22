"""The smartsearch recipe (SFT -> DPO curriculum, then EM +/- scaled novelty x usefulness + format).

`python evalsuite/methods/smartsearch/recipe.py [--config FILE] [-o CKPT]` is `evalsuite train smartsearch --config
FILE -o CKPT`: `RECIPE` below is the recipe the shared trainer (`evalsuite.training.trainer`) runs through its
hooks; the rollout loop, retriever and reward (`evalsuite.methods.smartsearch.reward`) live in evalsuite; the
settings in evalsuite/methods/smartsearch/configs/. Paper setting, ours, every deviation: docs/recipes/smartsearch.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError
from evalsuite.rewards import MethodReward, get_reward
from evalsuite.training.config import TrainConfig
from evalsuite.training.data import QueryColumn
from evalsuite.training.recipe import Recipe
from evalsuite.training.rollout import RolloutExtension

METHOD = "smartsearch"


@dataclass
class RefineSpec:
    """Stage 3: `slots` of each group's `num_generations` rollouts come from refining a weak query of the others and
    regenerating from there; at most `max_shared_prefix` trajectories of a group share one source's prefix.
    `refiner`: `policy` (the live model rewrites its own query) or a backend mapping `{backend, model, ...options}`."""

    slots: int = 0
    max_shared_prefix: int = 2
    refiner: Any = "policy"
    max_tokens: int = 32


@dataclass
class SmartSearchConfig(TrainConfig):
    """SmartSearch's YAML: the shared settings (its curriculum's TRL arguments in `sft` and `dpo`; absent: the stage
    does not run), the trajectories sampled per question for the curriculum, and `refine`."""

    curriculum_samples: int = 2
    refine: RefineSpec = field(default_factory=RefineSpec)
    # the curriculum's decomposition trajectories follow these plans (`evalsuite train search-p1 plans` files; none:
    # the rows' gold decompositions)
    reference_plans: str | dict[str, str] | None = None


class SmartSearchRecipe(Recipe[SmartSearchConfig]):
    """SFT on screened trajectories, DPO on refined vs original ones
    (`methods.smartsearch.curriculum`), then GRPO whose groups include refined branches
    (`methods.smartsearch.refinement`); queries are judged useful by `reward.panel` when given."""

    name = METHOD
    evaluator_method = "smartsearch"
    summary = "SFT -> DPO curriculum, then EM +/- scaled novelty x usefulness + format"
    config_class = SmartSearchConfig
    stages = ("sft", "dpo", "grpo")

    def build_reward(self, config: SmartSearchConfig) -> MethodReward:
        return get_reward(self.name, config.reward.settings)

    def check_config(self, config: SmartSearchConfig, path: Path) -> None:
        refine, generations = config.refine, config.grpo.get("num_generations", 8)  # TRL's default group size
        if refine.slots < 0 or refine.max_shared_prefix < 1:
            raise DataError(f"{path}: refine.slots must be >= 0 and refine.max_shared_prefix >= 1")
        if refine.slots >= generations:
            raise DataError(
                f"{path}: refine.slots {refine.slots} leaves no fresh rollout in a group of {generations}",
                hint="use fewer slots than grpo.num_generations",
            )
        if refine.refiner != "policy" and not (
            isinstance(refine.refiner, dict) and {"backend", "model"} <= set(refine.refiner)
        ):
            raise DataError(
                f"{path}: refine.refiner must be 'policy' or a mapping with backend and model, got {refine.refiner!r}"
            )

    def rollout_method(self, config: SmartSearchConfig, golds: dict[str, list[str]]) -> Any:
        """SmartSearch's protocol; with `reward.panel`, its usefulness judge."""
        if not config.reward.panel:
            return super().rollout_method(config, golds)
        from evalsuite.methods.smartsearch.method import SmartSearch
        from evalsuite.methods.smartsearch.usefulness import PanelUsefulnessJudge

        return SmartSearch(judge=PanelUsefulnessJudge(config.reward.panel, golds))

    def row_columns(self, config: SmartSearchConfig) -> list[QueryColumn]:
        from evalsuite.methods.search_p1.plans import REFERENCE_PLANS

        return [REFERENCE_PLANS]

    def rollout_extension(self, config: SmartSearchConfig, golds: dict[str, list[str]]) -> RolloutExtension | None:
        from evalsuite.methods.smartsearch.refinement import RefinedRollouts

        return RefinedRollouts(config.refine) if config.refine.slots > 0 else None

    def logged_columns(self, config: SmartSearchConfig) -> list[str]:
        return ["refined"] if config.refine.slots > 0 else []

    def curriculum(
        self, config: SmartSearchConfig, model_path: str, out: Path, rows: list[dict[str, Any]], reward: MethodReward
    ) -> tuple[str, dict[str, Any]]:
        if config.sft is None and config.dpo is None:
            return model_path, {}
        from evalsuite.methods.smartsearch.curriculum import run_curriculum

        # a reward of its own: screening and ranking leave no state in GRPO's
        return run_curriculum(
            config, model_path, out, rows, lambda golds: self.rollout_method(config, golds), self.build_reward(config)
        )

    def finished_curriculum(self, config: SmartSearchConfig, out: Path) -> str | None:
        from evalsuite.methods.smartsearch.curriculum import finished_curriculum

        return finished_curriculum(config, out)


RECIPE = SmartSearchRecipe()

if __name__ == "__main__":
    from evalsuite.training.trainer import recipe_main

    recipe_main(METHOD)
