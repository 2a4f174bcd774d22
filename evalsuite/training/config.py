"""Training configuration (TRL-style dataclasses): what to train, on which rows, with which rollout and reward.

A recipe's YAML maps onto `TrainConfig`; its `grpo` (and `sft`/`dpo`) mappings go verbatim to TRL's config classes,
so every TRL option is available and TRL's documented defaults apply to whatever a YAML leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from evalsuite.agent.engine import RolloutConfig
from evalsuite.errors import DataError

RECIPES = ("search-r1", "progress", "subsearch", "search-p1", "oases", "smartsearch")


@dataclass
class RewardSpec:
    """The method reward's settings (its config dataclass fields) and how queries are matched (`lexical` or `judge`)."""

    settings: dict[str, Any] = field(default_factory=dict)
    matcher: str = "lexical"
    matcher_threshold: float = 0.5
    panel: str | None = None


@dataclass
class TrainConfig:
    """One recipe run. `deviations` are recorded in the manifest next to the paper's setting."""

    method: str
    model: str = "smollm2-135m"
    tasks: str = "adqa"
    split: str = "train"
    subset: str = "full"
    data_dir: str | None = None
    retriever: str = "adqa"
    prompt_style: str = "auto"
    rollout: dict[str, Any] = field(default_factory=dict)
    reward: RewardSpec = field(default_factory=RewardSpec)
    grpo: dict[str, Any] = field(default_factory=dict)
    sft: dict[str, Any] | None = None
    dpo: dict[str, Any] | None = None
    curriculum_samples: int = 2
    # Smoke runs only: weight of a dense `question_overlap` reward, because a 135M model's task rewards are all equal
    # (no tags, no answers), which gives zero advantages and zero gradients. 0 in every GPU config.
    smoke_overlap_weight: float = 0.0
    reference_plans: str | None = None
    teacher_queries: str | None = None
    algorithm: str = "grpo"
    paper: dict[str, Any] = field(default_factory=dict)
    deviations: list[str] = field(default_factory=list)
    accelerate: dict[str, Any] = field(default_factory=dict)

    def rollout_config(self) -> RolloutConfig:
        """The evaluator's rollout limits, overridden by the YAML's `rollout` mapping."""
        known = {f.name for f in fields(RolloutConfig)}
        unknown = sorted(set(self.rollout) - known)
        if unknown:
            raise DataError(f"unknown rollout settings {unknown}", hint=f"known: {', '.join(sorted(known))}")
        return RolloutConfig(**self.rollout)


def load_config(path: str | Path, method: str | None = None) -> TrainConfig:
    """Read a recipe YAML; the file names its method, which must agree with `method` when given."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such config file", hint="see train_recipes/configs/<method>/cpu_smoke.yaml")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: the top level must be a mapping")
    raw.setdefault("method", method)
    if raw["method"] not in RECIPES:
        raise DataError(f"{path}: method {raw['method']!r} is not a recipe", hint=f"one of: {', '.join(RECIPES)}")
    if method is not None and raw["method"] != method:
        raise DataError(f"{path}: the file is for {raw['method']!r}, not {method!r}")
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise DataError(f"{path}: unknown keys {unknown}", hint=f"known: {', '.join(sorted(known))}")
    reward = raw.pop("reward", None) or {}
    reward_known = {f.name for f in fields(RewardSpec)}
    if set(reward) - reward_known:
        raise DataError(f"{path}: unknown reward keys {sorted(set(reward) - reward_known)}", hint=f"known: {', '.join(sorted(reward_known))}")
    return TrainConfig(**raw, reward=RewardSpec(**reward))
