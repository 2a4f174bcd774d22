"""Training rewards, in TRL's calling convention (completions plus dataset columns → one float each): what every
reward shares (`rewards.base`: the sample a reward reads, format validity; `rewards.matching`: how queries are
matched) and the registry of each method's reward.

`get_reward(name, settings)` builds a method's reward by stable name. The rewards themselves live with their method
(`evalsuite/methods/<name>/reward.py`, named in the package's `PARTS`), each quoting its paper's equations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import Registry
from evalsuite.rewards.base import MethodReward, completion_text, format_valid


def _check_reward(name: str, value: Any) -> type[MethodReward]:
    if not (
        isinstance(value, type)
        and issubclass(value, MethodReward)
        and isinstance(getattr(value, "config_class", None), type)
    ):
        raise EvalsuiteError(
            f"reward {name!r} is {value!r}, not a MethodReward subclass with a config_class",
            hint="point the entry point at a subclass of evalsuite.rewards.MethodReward",
        )
    return value


# The methods' rewards, from their packages (lazy: a reward module is imported when its name is asked for), then
# the plugins'.
REWARDS: Registry[type[MethodReward]] = Registry("reward", check=_check_reward, packaged="reward")


def register_reward(name: str, reward: str | type[MethodReward], *, replace: bool = False) -> None:
    """Register a reward class (or a lazy `module:Class` target) under a method's name."""
    REWARDS.register(name, reward, replace=replace)


def list_rewards() -> list[str]:
    """Registered reward names (the six methods, then plugins)."""
    return sorted(REWARDS.names())


def get_reward(name: str, settings: dict[str, Any] | None = None, **objects: Any) -> MethodReward:
    """The reward of method `name` with `settings` for its
    config dataclass; `objects` (e.g. matcher=) go to the class."""
    cls = REWARDS.get(name)
    config_cls = cls.config_class
    try:
        config = config_cls(**(settings or {}))
    except (TypeError, ValueError) as exc:
        raise EvalsuiteError(
            f"bad settings for the {name} reward: {exc}", hint=f"fields: {', '.join(config_cls.__dataclass_fields__)}"
        ) from exc
    build: Callable[..., MethodReward] = cls  # each reward's __init__ takes its config and objects of its own
    return build(config, **objects)


__all__ = [
    "REWARDS",
    "MethodReward",
    "completion_text",
    "format_valid",
    "get_reward",
    "list_rewards",
    "register_reward",
]
