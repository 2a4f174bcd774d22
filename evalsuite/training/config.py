"""Training configuration (TRL-style dataclasses): what to train, on which rows, with which rollout and reward.

A recipe's YAML maps onto `TrainConfig`; its `grpo` (and `sft`/`dpo`) mappings go verbatim to TRL's config classes,
so every TRL option is available and TRL's documented defaults apply to whatever a YAML leaves out.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from evalsuite.agent.engine import RolloutConfig
from evalsuite.errors import DataError, did_you_mean
from evalsuite.runs.report import check_destinations
from evalsuite.training.recipe import Recipe, RecipeRegistry, default_registry


@dataclass
class RewardSpec:
    """The method reward's settings (its config dataclass fields) and how queries are matched (`lexical` or `judge`)."""

    settings: dict[str, Any] = field(default_factory=dict)
    matcher: str = "lexical"
    matcher_threshold: float = 0.5
    panel: str | None = None


@dataclass
class TrainConfig:
    """One recipe run: the settings every recipe shares. A recipe with sections of its own (SmartSearch's `refine`,
    `sft`, `dpo`) loads into its `Recipe.config_class`, a subclass. `deviations` are recorded in the manifest next to
    the paper's setting."""

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
    # TRL's SFTConfig / DPOConfig arguments of the stages before GRPO, for a recipe whose `stages` include them
    sft: dict[str, Any] | None = None
    dpo: dict[str, Any] | None = None
    # Smoke runs only: weight of a dense `question_overlap` reward, because a 135M model's task rewards are all equal
    # (no tags, no answers), which gives zero advantages and zero gradients. 0 in every GPU config.
    smoke_overlap_weight: float = 0.0
    # parameters kept out of training by name part (`[embed_tokens, lm_head]`): no gradients, no optimizer state
    freeze: list[str] = field(default_factory=list)
    algorithm: str = "grpo"
    # setting -> {value, and its source: seed + quote | inherited: search-r1 | assumed: WHY}
    # (training.paper_deviations); a file name instead takes that config's block (a smoke config names its gpu.yaml)
    paper: dict[str, Any] = field(default_factory=dict)
    deviations: list[str] = field(default_factory=list)
    # the launch's process count (num_processes), for the paper-unit arithmetic of training.paper_deviations
    accelerate: dict[str, Any] = field(default_factory=dict)
    # Where TRL sends its logs besides training_log.jsonl: "none", "tensorboard", "wandb" or a list of them.
    report_to: str | list[str] = "none"
    # `evalsuite reproduce`: the benchmarks, subset and backend the checkpoint and its base are evaluated on
    # (evalsuite.reproduce.ReproduceSettings reads it); training ignores it, so editing it never retrains.
    reproduce: dict[str, Any] = field(default_factory=dict)

    def rollout_config(self) -> RolloutConfig:
        """The evaluator's rollout limits, overridden by the YAML's `rollout` mapping."""
        known = {f.name for f in fields(RolloutConfig)}
        unknown = sorted(set(self.rollout) - known)
        if unknown:
            raise DataError(f"unknown rollout settings {unknown}", hint=f"known: {', '.join(sorted(known))}")
        return RolloutConfig(**self.rollout)


def load_config(path: str | Path, method: str | None = None, registry: RecipeRegistry | None = None) -> TrainConfig:
    """Read a recipe YAML into its recipe's config class; the file names its method, which must agree with `method`
    when given. `registry`: where the method is looked up (default: the shipped recipes)."""
    from evalsuite.resources import packaged_recipe_config, packaged_recipe_config_names

    recipes = registry or default_registry()
    path = Path(path)
    if not path.exists():
        path = packaged_recipe_config(method or "", str(path)) or path
    if not path.exists():
        shipped = packaged_recipe_config_names(method or "")
        names = (
            f"{method}'s shipped configs: {', '.join(shipped)}"
            if shipped
            else "a shipped config: cpu_smoke, gpu or <method>/cpu_smoke"
        )
        raise DataError(f"{path}: no such config file", hint=f"pass a YAML file, or {names}")
    raw = read_recipe_yaml(path, "recipe config") or {}
    if not isinstance(raw, dict):
        raise DataError(f"{path}: the top level must be a mapping")
    raw.setdefault("method", method)
    if raw["method"] not in recipes:
        raise DataError(
            f"{path}: method {raw['method']!r} is not a recipe",
            hint=did_you_mean(raw["method"], recipes.names(), f"one of: {', '.join(recipes.names())}"),
        )
    if method is not None and raw["method"] != method:
        raise DataError(f"{path}: the file is for {raw['method']!r}, not {method!r}")
    recipe = recipes.get(raw["method"])
    config_class = recipe.config_class or TrainConfig
    known = {f.name: f for f in fields(config_class)}
    unknown = sorted(set(raw) - set(known))
    for key in unknown:
        owners = recipes.owners(key)
        if owners:
            raise DataError(
                f"{path}: {key} is a setting of the {', '.join(owners)} recipe; {recipe.name} does not take it"
            )
    if unknown:
        raise DataError(f"{path}: unknown keys {unknown}", hint=f"known: {', '.join(sorted(known))}")
    if isinstance(raw.get("paper"), str):
        raw["paper"] = _paper_block(path.parent / raw["paper"], path)
    for name, spec in known.items():  # nested sections (reward, and a recipe's own) as their dataclasses
        if spec.default_factory is not MISSING and is_dataclass(spec.default_factory):
            raw[name] = _section(raw, name, spec.default_factory, path)
    config = config_class(**raw)
    check_config(config, path, recipe)
    from evalsuite.training.paper_deviations import setting_table

    setting_table(config, path)  # refuses a malformed paper block now, not when the manifest is written
    # files a config names are relative to the config (so a recipe runs from any directory)
    config.reward.panel = _beside(path, config.reward.panel)
    for column in recipe.row_columns(config):  # a method's per-row files (teacher queries, reference plans)
        setattr(config, column.setting, _beside(path, getattr(config, column.setting)))
    return config


# the TrainConfig fields that hold the TRL arguments of a stage before GRPO (a recipe's `stages` says which it runs)
CURRICULUM_SECTIONS = ("sft", "dpo")


def report_destinations(config: TrainConfig) -> list[str]:
    """config.report_to as a list ("none" -> [])."""
    wanted = [config.report_to] if isinstance(config.report_to, str) else list(config.report_to)
    return [d for d in wanted if d != "none"]


def stage_arguments(config: TrainConfig, settings: dict[str, Any], output_dir: Path) -> dict[str, Any]:
    """Keyword arguments of a TRL stage config (GRPOConfig, SFTConfig, DPOConfig): the recipe's report_to, the
    stage's own settings over our defaults, and TRL's progress bar only when stderr is a terminal."""
    import sys

    defaults = {
        "report_to": report_destinations(config) or "none",
        "save_strategy": "no",
        "logging_steps": 1,
        "disable_tqdm": not sys.stderr.isatty(),
    }
    return {**defaults, **settings, "output_dir": str(output_dir)}


def check_config(config: TrainConfig, path: Path, recipe: Recipe) -> None:
    """Refuse settings that would only fail (or silently do
    nothing) minutes into a run; then the recipe's own checks."""
    # the destinations `evalsuite run --report-to` sends evaluations to, each with its client installed
    check_destinations(report_destinations(config), f"{path}: report_to")
    for section in CURRICULUM_SECTIONS:
        if section not in recipe.stages and getattr(config, section) is not None:
            raise DataError(
                f"{path}: {config.method} has no {section} stage (its stages: {', '.join(recipe.stages)})",
                hint=f"remove the {section} section",
            )
    for section in recipe.stages:
        for key, value in (getattr(config, section) or {}).items():
            if isinstance(value, str) and _is_number(value):
                # YAML 1.1 reads 1e-6 (no dot) as text; TRL passes it on and the optimizer fails at the first step
                raise DataError(
                    f"{path}: {section}.{key} is the text {value!r}, not a number",
                    hint=f"write it with a dot, e.g. {float(value):.1e}",
                )
    _check_algorithm(config, path, recipe)
    check_precision(config, path)
    recipe.check_config(config, path)


def _check_algorithm(config: TrainConfig, path: Path, recipe: Recipe) -> None:
    """`algorithm` is a label the manifest and the paper-setting table show, so it must name the trainer that runs:
    the recipe's last stage (GRPO for every recipe the shared trainer runs). `algorithm: ppo` while GRPO trains would
    read as the paper's setting; it is refused, and the paper's own algorithm belongs in the `paper:` block."""
    runs = recipe.stages[-1]
    if not isinstance(config.algorithm, str) or config.algorithm.strip().lower() != runs:
        raise DataError(
            f"{path}: algorithm {config.algorithm!r} is not what trains: {config.method}'s recipe runs {runs} "
            f"(TRL's {runs.upper()}Trainer)",
            hint=f"write algorithm: {runs}; a paper's other algorithm goes in the paper: block as a deviation",
        )
    config.algorithm = runs


def check_precision(config: TrainConfig, path: Path) -> None:
    """A CPU stage (`use_cpu`) that trains in bf16 (`bf16: true`, or bf16 weights through
    `model_init_kwargs.dtype`) needs native bf16 (evalsuite.models.precision): refused in one line now, not as a slow
    emulated run."""
    from evalsuite.models.precision import is_bf16, require_cpu_bf16

    for section in ("grpo", *CURRICULUM_SECTIONS):
        settings = getattr(config, section) or {}
        init = settings.get("model_init_kwargs") or {}
        asked = [
            key
            for key, on in (("bf16", settings.get("bf16")), ("model_init_kwargs.dtype", is_bf16(init.get("dtype"))))
            if on
        ]
        if asked and _on_cpu(settings):
            require_cpu_bf16(f"{path}: {section}.{asked[0]}")


def _on_cpu(settings: dict[str, Any]) -> bool:
    """The stage says it runs on the CPU (`use_cpu`). A GPU config loaded on a machine without a GPU (a dry run) is
    not refused: where it trains is decided by the machine it runs on."""
    return bool(settings.get("use_cpu"))


def read_recipe_yaml(path: Path, what: str) -> Any:
    """A recipe file's YAML, read as untrusted input (a recipe can come from anyone): a regular file only, at most
    MAX_CONFIG_BYTES, aliases expanding to at most MAX_YAML_NODES values; each refusal one line naming the file."""
    import yaml

    from evalsuite.files import MAX_CONFIG_BYTES, load_untrusted_yaml, read_untrusted_bytes

    try:
        text = read_untrusted_bytes(path, MAX_CONFIG_BYTES, what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: the {what} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return load_untrusted_yaml(text, path)
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None


def _paper_block(other: Path, path: Path) -> dict[str, Any]:
    """The `paper:` block of another recipe file (`paper: gpu.yaml`)."""
    if not other.exists():
        raise DataError(f"{path}: paper names {other}, which does not exist")
    loaded = read_recipe_yaml(other, "recipe config")
    block = loaded.get("paper") if isinstance(loaded, dict) else None
    if not isinstance(block, dict):
        raise DataError(f"{path}: paper names {other}, which has no paper mapping")
    return block


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
        raise DataError(
            f"{path}: unknown {key} keys {sorted(set(values) - known)}", hint=f"known: {', '.join(sorted(known))}"
        )
    return cls(**values)
