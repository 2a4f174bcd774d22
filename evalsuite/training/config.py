"""Training configuration (TRL-style dataclasses): what to train, on which rows, with which rollout and reward.

A recipe's YAML maps onto `TrainConfig`; its `grpo` (and `sft`/`dpo`) mappings go verbatim to TRL's config classes,
so every TRL option is available and TRL's documented defaults apply to whatever a YAML leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from evalsuite.agent.engine import RolloutConfig
from evalsuite.errors import DataError, require

RECIPES = ("search-r1", "progress", "subsearch", "search-p1", "oases", "smartsearch")


@dataclass
class RewardSpec:
    """The method reward's settings (its config dataclass fields) and how queries are matched (`lexical` or `judge`)."""

    settings: dict[str, Any] = field(default_factory=dict)
    matcher: str = "lexical"
    matcher_threshold: float = 0.5
    panel: str | None = None


@dataclass
class StateEvalSpec:
    """OASES: the state-evaluation answers' budget, their temperature (None: the trainer's) and the weight of their
    co-training loss (0 turns co-training off; the answers still give the state scores)."""

    weight: float = 1.0
    max_tokens: int = 32
    temperature: float | None = None


@dataclass
class RefineSpec:
    """SmartSearch stage 3: `slots` of each group's `num_generations` rollouts come from refining a weak query of the
    others and regenerating from there; at most `max_shared_prefix` trajectories of a group share one source's prefix.
    `refiner`: `policy` (the live model rewrites its own query) or a backend mapping `{backend, model, ...options}`."""

    slots: int = 0
    max_shared_prefix: int = 2
    refiner: Any = "policy"
    max_tokens: int = 32


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
    state_eval: StateEvalSpec = field(default_factory=StateEvalSpec)
    refine: RefineSpec = field(default_factory=RefineSpec)
    # Smoke runs only: weight of a dense `question_overlap` reward, because a 135M model's task rewards are all equal
    # (no tags, no answers), which gives zero advantages and zero gradients. 0 in every GPU config.
    smoke_overlap_weight: float = 0.0
    # a file for every task, or a mapping task -> file
    reference_plans: str | dict[str, str] | None = None
    teacher_queries: str | dict[str, str] | None = None
    algorithm: str = "grpo"
    paper: dict[str, Any] = field(default_factory=dict)
    deviations: list[str] = field(default_factory=list)
    accelerate: dict[str, Any] = field(default_factory=dict)
    # Where TRL sends its logs besides training_log.jsonl: "none", "tensorboard", "wandb" or a list of them.
    report_to: str | list[str] = "none"

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

    from evalsuite.resources import packaged_recipe_config

    path = Path(path)
    if not path.is_file():
        path = packaged_recipe_config(method or "", str(path)) or path
    if not path.is_file():
        raise DataError(f"{path}: no such config file", hint="pass a YAML file, or a shipped config: cpu_smoke, gpu or <method>/cpu_smoke")
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
    reward = _section(raw, "reward", RewardSpec, path)
    state_eval = _section(raw, "state_eval", StateEvalSpec, path)
    refine = _section(raw, "refine", RefineSpec, path)
    config = TrainConfig(**raw, reward=reward, state_eval=state_eval, refine=refine)
    check_config(config, path)
    # files a config names are relative to the config (so a recipe runs from any directory)
    config.reward.panel = _beside(path, config.reward.panel)
    config.reference_plans = _beside(path, config.reference_plans)
    config.teacher_queries = _beside(path, config.teacher_queries)
    return config


# report_to destinations evalsuite knows and the extra that installs each one's client
REPORT_EXTRAS = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb")}


def report_destinations(config: TrainConfig) -> list[str]:
    """config.report_to as a list ("none" -> [])."""
    wanted = [config.report_to] if isinstance(config.report_to, str) else list(config.report_to)
    return [d for d in wanted if d != "none"]


def stage_arguments(config: TrainConfig, settings: dict[str, Any], output_dir: Path) -> dict[str, Any]:
    """Keyword arguments of a TRL stage config (GRPOConfig, SFTConfig, DPOConfig): the recipe's report_to, the
    stage's own settings over our defaults, and TRL's progress bar only when stderr is a terminal."""
    import sys

    defaults = {"report_to": report_destinations(config) or "none", "save_strategy": "no", "logging_steps": 1,
                "disable_tqdm": not sys.stderr.isatty()}
    return {**defaults, **settings, "output_dir": str(output_dir)}


def check_config(config: TrainConfig, path: Path) -> None:
    """Refuse settings that would only fail (or silently do nothing) minutes into a run."""
    for destination in report_destinations(config):
        if destination not in REPORT_EXTRAS:
            raise DataError(f"{path}: report_to {destination!r} is not one of none, {', '.join(REPORT_EXTRAS)}")
        module, extra = REPORT_EXTRAS[destination]
        require(module, extra, f"report_to: {destination}")
    refine, generations = config.refine, config.grpo.get("num_generations", 8)  # TRL's default group size
    if refine.slots < 0 or refine.max_shared_prefix < 1:
        raise DataError(f"{path}: refine.slots must be >= 0 and refine.max_shared_prefix >= 1")
    if refine.slots and config.method != "smartsearch":
        raise DataError(f"{path}: refine is SmartSearch's; {config.method} does not refine queries")
    if refine.slots >= generations:
        raise DataError(f"{path}: refine.slots {refine.slots} leaves no fresh rollout in a group of {generations}", hint="use fewer slots than grpo.num_generations")
    if refine.refiner != "policy" and not (isinstance(refine.refiner, dict) and {"backend", "model"} <= set(refine.refiner)):
        raise DataError(f"{path}: refine.refiner must be 'policy' or a mapping with backend and model, got {refine.refiner!r}")
    if config.state_eval.weight < 0 or config.state_eval.max_tokens < 1:
        raise DataError(f"{path}: state_eval.weight must be >= 0 and state_eval.max_tokens >= 1")
    for section in ("grpo", "sft", "dpo"):
        for key, value in (getattr(config, section) or {}).items():
            if isinstance(value, str) and _is_number(value):
                # YAML 1.1 reads 1e-6 (no dot) as text; TRL passes it on and the optimizer fails at the first step
                raise DataError(f"{path}: {section}.{key} is the text {value!r}, not a number", hint=f"write it with a dot, e.g. {float(value):.1e}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _beside(config_path: Path, name: Any) -> Any:
    if isinstance(name, dict):
        return {key: _beside(config_path, value) for key, value in name.items()}
    if name is None or Path(name).is_absolute():
        return name
    return str((config_path.parent / name).resolve())


def _section(raw: dict[str, Any], key: str, cls: type, path: Path) -> Any:
    """A nested mapping of the YAML as its dataclass, refusing unknown keys."""
    values = raw.pop(key, None) or {}
    if not isinstance(values, dict):
        raise DataError(f"{path}: {key} must be a mapping")
    known = {f.name for f in fields(cls)}
    if set(values) - known:
        raise DataError(f"{path}: unknown {key} keys {sorted(set(values) - known)}", hint=f"known: {', '.join(sorted(known))}")
    return cls(**values)
