"""Training recipes and their registry: a recipe is the `RECIPE` (an instance of a `Recipe` subclass) of its
method's package, `evalsuite/methods/<name>/recipe.py`, named in the package's `PARTS`.

As in TRL's trainer/config pairs, a recipe names its config class (a `TrainConfig` subclass holding its own sections,
e.g. SmartSearch's `refine`) and overrides the hooks the shared trainer (`training.trainer`) calls: its reward, its data
preparation, the evaluator method its rollouts play, the extension of the rollout, the stages that run before GRPO
(SFT, DPO) and the GRPO trainer class (co-training). The trainer never branches on a method's name and holds no
method's settings; it asks the recipe.

The default registry holds the method packages' recipes and the installed plugins' (entry-point group
`evalsuite.recipes`), so adding a recipe is its method package's `recipe.py` plus its configs
(`evalsuite/methods/<name>/configs/`). A `RecipeRegistry()` of one's own (tests, plugins) is passed where a registry
is taken (`load_config`, `train`), or made the active one with `using_registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import Registry, named_instance

if TYPE_CHECKING:  # annotations only: config.py imports this module
    from evalsuite.agent.method import Method
    from evalsuite.rewards import MethodReward
    from evalsuite.training.config import TrainConfig
    from evalsuite.training.data import QueryColumn
    from evalsuite.training.rollout import RolloutExtension


# the recipe's config class (TrainConfig or the recipe's subclass), so a recipe's hooks are typed with its own settings
ConfigT = TypeVar("ConfigT", bound="TrainConfig")


class Recipe(ABC, Generic[ConfigT]):
    """One training method: its name, the evaluator method it plays, its config schema and the trainer's hooks.

    Every hook but `build_reward` has the plain GRPO behaviour as its default, so a recipe overrides only what its
    method changes."""

    name: ClassVar[str]  # the stable method name: `evalsuite train NAME`, `method:` in the YAML
    # the evaluator method (`agent.method.METHODS`) whose prompt and parser it trains (Progress: search-r1)
    evaluator_method: ClassVar[str]
    summary: ClassVar[str] = ""  # one line for `evalsuite train --list`
    # the YAML's schema: a TrainConfig subclass with the recipe's own sections (None: TrainConfig itself); a field whose
    # default_factory is a dataclass is a nested section, loaded as that dataclass with its unknown keys refused
    config_class: ClassVar[type | None] = None
    # the TRL stages it runs, in order, ending with grpo; each names the config's mapping that goes verbatim to TRL's
    # config class (grpo, sft, dpo); `curriculum` runs those before grpo
    stages: ClassVar[tuple[str, ...]] = ("grpo",)
    # extra `evalsuite train NAME ACTION` commands besides `run` (Search-P1: `plans`)
    actions: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def build_reward(self, config: ConfigT) -> MethodReward:
        """The reward GRPO optimises (TRL's calling convention: `evalsuite.rewards.MethodReward`)."""

    def check_config(self, config: ConfigT, path: Path) -> None:
        """Refuse this recipe's settings that would only fail (or do nothing) minutes into a run."""

    def row_columns(self, config: ConfigT) -> list[QueryColumn]:
        """The lists per training row this method reads besides the shared columns (`training.data.QueryColumn`:
        teacher queries, reference plans), from the files its config names."""
        return []

    def prepare_data(self, config: ConfigT, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The training rows (`training.data.training_rows`) as this recipe trains on them; refuse rows it cannot
        use."""
        return rows

    def played_method(self, config: ConfigT) -> str:
        """The name of the evaluator method a run of `config` plays (its rollouts, its manifest, `reproduce`'s
        evaluations): `evaluator_method` unless the recipe lets the config choose."""
        return self.evaluator_method

    def rollout_method(self, config: ConfigT, golds: dict[str, list[str]]) -> Method:
        """The evaluator's method the rollouts play (`golds`: question -> golden answers, for judges that need them)."""
        from evalsuite.agent.method import get_method

        return get_method(self.evaluator_method)

    def rollout_extension(self, config: ConfigT, golds: dict[str, list[str]]) -> RolloutExtension | None:
        """What the method changes in the shared rollout function (`training.rollout.RolloutExtension`: other rollouts
        for a batch, more columns); None plays each prompt once."""
        return None

    def logged_columns(self, config: ConfigT) -> list[str]:
        """Rollout columns logged every step as zero-weight rewards (besides `training.rollout.ROLLOUT_METRICS`)."""
        return []

    def grpo_trainer(
        self, trl: Any, config: ConfigT, reward: MethodReward, rollout: Any
    ) -> tuple[type, dict[str, Any]]:
        """The GRPO trainer class and its extra keyword arguments (a subclass adds co-training terms)."""
        return trl.GRPOTrainer, {}

    def curriculum(
        self, config: ConfigT, model_path: str, out: Path, rows: list[dict[str, Any]], reward: MethodReward
    ) -> tuple[str, dict[str, Any]]:
        """The stages before GRPO: returns the model GRPO starts from and what each stage did (the manifest's
        `stages`); the default runs none."""
        return model_path, {}

    def finished_curriculum(self, config: ConfigT, out: Path) -> str | None:
        """The model a finished `curriculum` left in `out` (a resumed run skips it), else None."""
        return None

    def run_action(self, action: str, config: ConfigT, out: Path | None, options: dict[str, Any]) -> str:
        """Run one of `actions`; returns the line to print."""
        raise EvalsuiteError(f"{self.name} has no action {action!r}")


def _check_recipe(name: str, recipe: Any) -> Recipe[Any]:
    """A recipe the shared trainer can run: a Recipe instance naming its evaluator method, whose stages end with
    grpo."""
    if not isinstance(recipe, Recipe):
        raise EvalsuiteError(f"{recipe!r} is not a Recipe instance")
    if not getattr(recipe, "name", None) or not getattr(recipe, "evaluator_method", None):
        raise EvalsuiteError(f"{type(recipe).__name__} must set the class attributes name and evaluator_method")
    named_instance("recipe", Recipe)(name, recipe)
    if not recipe.stages or recipe.stages[-1] != "grpo":
        raise EvalsuiteError(
            f"{type(recipe).__name__}.stages must end with grpo (the shared trainer's last stage), got {recipe.stages}"
        )
    return recipe


class RecipeRegistry:
    """Recipes by name (an `evalsuite.registry.Registry` iterated as recipes). `RecipeRegistry.builtin()` holds the
    shipped ones and those of installed plugins (entry-point group `evalsuite.recipes`); an empty one holds what is
    added to it."""

    def __init__(self, recipes: list[Recipe[Any]] | None = None, *, plugins: bool = False) -> None:
        self._registry: Registry[Recipe[Any]] = Registry(
            "recipe",
            check=_check_recipe,
            group="evalsuite.recipes" if plugins else "",
            packaged="recipe" if plugins else None,
        )
        for recipe in recipes or []:
            self.add(recipe)

    @classmethod
    def builtin(cls) -> RecipeRegistry:
        """The method packages' recipes (`evalsuite.methods.<name>.recipe`), then the installed plugins'."""
        return cls(plugins=True)

    def copy(self) -> RecipeRegistry:
        return RecipeRegistry(list(self))

    def add(self, recipe: Recipe[Any], *, replace: bool = False) -> Recipe[Any]:
        """Register `recipe` under its name; a second recipe of the same name is refused unless `replace=True`."""
        name = getattr(recipe, "name", None) if isinstance(recipe, Recipe) else None
        self._registry.register(name or "?", _check_recipe(name or "?", recipe), replace=replace)
        return recipe

    def get(self, name: str) -> Recipe[Any]:
        return self._registry.get(name)

    def names(self) -> list[str]:
        return self._registry.names()

    def __contains__(self, name: object) -> bool:
        return name in self._registry

    def __iter__(self) -> Iterator[Recipe[Any]]:
        return iter(self._registry.values())

    def owners(self, key: str) -> list[str]:
        """The recipes whose config class declares the YAML key `key` (for the error on a key its recipe lacks)."""
        return [r.name for r in self if r.config_class is not None and key in {f.name for f in fields(r.config_class)}]


_builtin: RecipeRegistry | None = None
_active: list[RecipeRegistry] = []


def default_registry() -> RecipeRegistry:
    """The active registry: the innermost `using_registry`, else the shipped recipes (imported on first use)."""
    global _builtin
    if _active:
        return _active[-1]
    if _builtin is None:
        _builtin = RecipeRegistry.builtin()
    return _builtin


@contextmanager
def using_registry(registry: RecipeRegistry) -> Iterator[RecipeRegistry]:
    """Make `registry` the one `evalsuite train` and `load_config` use inside the block."""
    _active.append(registry)
    try:
        yield registry
    finally:
        _active.pop()


def get_recipe(name: str) -> Recipe[Any]:
    """The active registry's recipe `name` (an unknown name gets a did-you-mean)."""
    return default_registry().get(name)
