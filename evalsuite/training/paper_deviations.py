"""A recipe's `paper:` block against the run it configures: every value labelled paper / inherited / assumed, our
value beside it, and every place where the two differ.

Each key of the block is either one of the settings below (steps, batch_size, ...: the paper's units, computed from
the TRL sections) or a dotted path into the config (`reward.settings.coverage_weight`, `sft.learning_rate`,
`curriculum_samples`); `DESCRIPTIVE` keys (retriever, teacher, ...) and `rule.NAME` keys (a rule of the reward or the
rollout that no single config value holds, e.g. `rule.soft_format`) are shown but not compared. A value the paper
prints (or inherits) that our run does not use is a deviation; its entry says why in `because`. The block's entries
are `evalsuite.agent.papers.PaperValue`s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsuite.agent.papers import PaperValue, parse_value
from evalsuite.errors import DataError

if TYPE_CHECKING:  # config.py imports this module to check a recipe's paper block when it loads
    from evalsuite.training.config import TrainConfig

# Descriptions with no single config value to compare against.
DESCRIPTIVE = ("retriever", "teacher", "judge", "evaluator", "refiner", "hardware")
RULE_PREFIX = "rule."  # `rule.NAME`: a choice of the reward's or the rollout's definition, described, not compared


def is_descriptive(name: str) -> bool:
    """Shown with its label and source but not compared with a config value."""
    return name in DESCRIPTIVE or name.startswith(RULE_PREFIX)


def _steps(config: TrainConfig) -> float | None:
    """Paper steps (one generation of the paper's batch each)
    = optimizer updates × accumulation / steps_per_generation."""
    grpo = config.grpo
    if "max_steps" not in grpo:
        return None
    accumulation = grpo.get("gradient_accumulation_steps", 1)
    return grpo["max_steps"] * accumulation / grpo.get("steps_per_generation", accumulation)


def _batch_size(config: TrainConfig) -> float | None:
    """Prompts per paper step = processes × per-device completions × steps_per_generation / rollouts per prompt."""
    grpo = config.grpo
    processes = config.accelerate.get("num_processes", 1)
    per_generation = (
        processes
        * grpo.get("per_device_train_batch_size", 8)
        * grpo.get("steps_per_generation", grpo.get("gradient_accumulation_steps", 1))
    )
    return per_generation / grpo.get("num_generations", 8)


# Named settings: how our run's value is read (the paper's units).
DERIVED = {
    "model": lambda c: c.model,
    "algorithm": lambda c: c.algorithm,
    "data": lambda c: c.tasks,
    "steps": _steps,
    "batch_size": _batch_size,
    "rollouts_per_prompt": lambda c: c.grpo.get("num_generations"),
    "learning_rate": lambda c: c.grpo.get("learning_rate"),
    "warmup": lambda c: c.grpo.get("warmup_steps"),
    "kl": lambda c: c.grpo.get("beta"),
    "temperature": lambda c: c.grpo.get("temperature"),
    "max_turns": lambda c: c.rollout.get("max_turns"),
    "topk": lambda c: c.rollout.get("topk"),
    "max_response_tokens": lambda c: c.rollout.get("max_tokens"),
    "max_obs_tokens": lambda c: c.rollout.get("max_obs_tokens"),
    "self_consistency_paths": lambda c: c.grpo.get("num_generations"),  # Search-P1 compares the group's paths
}


@dataclass(frozen=True)
class SettingRow:
    """One line of the setting table: the paper's value with its provenance, ours, and whether they differ."""

    paper: PaperValue
    ours: Any
    compared: bool

    @property
    def differs(self) -> bool:
        return self.compared and not same(self.paper.value, self.ours)

    def deviation(self) -> str:
        reason = f" — {self.paper.because}" if self.paper.because else ""
        return (
            f"{self.paper.name}: ours {_show(self.ours)}, the paper's "
            f"{_show(self.paper.value)} ({self.paper.label}){reason}"
        )


def paper_values(config: TrainConfig, where: str | Path = "config") -> list[PaperValue]:
    """The config's `paper:` block as PaperValues (refusing malformed entries)."""
    block = config.paper or {}
    if not isinstance(block, dict):
        raise DataError(f"{where}: paper must be a mapping of setting -> {{value, source}}")
    return [parse_value(name, raw, str(where)) for name, raw in block.items()]


def ours(config: TrainConfig, name: str) -> tuple[Any, bool]:
    """Our run's value for a paper key and whether it is compared (descriptive keys are not)."""
    if is_descriptive(name):
        return (config.retriever if name == "retriever" else None), False
    if name in DERIVED:
        return DERIVED[name](config), True
    value: Any = config
    for part in name.split("."):
        if value is None:
            return None, True  # a section switched off (`sft: null`): not set, shown as differing
        if isinstance(value, dict):
            if part not in value:
                return None, True  # not set: the library's default applies, shown as differing
            value = value[part]
        elif hasattr(value, part):
            value = getattr(value, part)
        else:
            raise DataError(
                f"paper.{name}: neither a named setting ({', '.join(DERIVED)}) nor a path into the config",
                hint=f"descriptive keys ({', '.join(DESCRIPTIVE)}, {RULE_PREFIX}NAME) are shown without comparison",
            )
    return value, True


def setting_table(config: TrainConfig, where: str | Path = "config") -> list[SettingRow]:
    """Every paper value beside ours."""
    rows = []
    for value in paper_values(config, where):
        mine, compared = ours(config, value.name)
        rows.append(SettingRow(value, mine, compared))
    return rows


def deviations(config: TrainConfig) -> list[str]:
    """Every value the paper prints or inherits that our run does not use, then the config's own notes."""
    printed = [row.deviation() for row in setting_table(config) if row.differs and row.paper.label != "assumed"]
    return printed + list(config.deviations)


def manifest_paper(config: TrainConfig) -> dict[str, Any]:
    """The manifest's `paper` field: per value its label, source, our value and whether it differs."""
    return {
        row.paper.name: {**row.paper.record(), "ours": row.ours, "differs": row.differs}
        for row in setting_table(config)
    }


def same(paper: Any, mine: Any) -> bool:
    """Equal values: numbers within rounding, text ignoring case and a leading organisation (`Qwen/`)."""
    if isinstance(paper, bool) or isinstance(mine, bool):
        return paper == mine
    if isinstance(paper, (int, float)) and isinstance(mine, (int, float)):
        return math.isclose(paper, mine, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(paper, str) and isinstance(mine, str):
        return _text(paper) == _text(mine)
    return paper == mine


def _text(value: str) -> str:
    return value.strip().lower().rsplit("/", 1)[-1]


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "—" if value is None else str(value)
