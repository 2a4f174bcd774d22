"""Training rewards per method, in TRL's calling convention (completions plus dataset columns → one float each).

`get_reward(name, **settings)` builds a method's reward by stable name; each module quotes the paper's equations.
"""

from __future__ import annotations

import difflib
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.rewards.base import MethodReward, completion_text, format_valid
from evalsuite.rewards.oases import OasesReward, OasesRewardConfig
from evalsuite.rewards.progress import ProgressReward, ProgressRewardConfig
from evalsuite.rewards.search_p1 import SearchP1Reward, SearchP1RewardConfig
from evalsuite.rewards.search_r1 import SearchR1Reward, SearchR1RewardConfig
from evalsuite.rewards.smartsearch import SmartSearchReward, SmartSearchRewardConfig
from evalsuite.rewards.subsearch import SubSearchReward, SubSearchRewardConfig

_REWARDS: dict[str, tuple[type[MethodReward], type]] = {
    "search-r1": (SearchR1Reward, SearchR1RewardConfig),
    "progress": (ProgressReward, ProgressRewardConfig),
    "subsearch": (SubSearchReward, SubSearchRewardConfig),
    "search-p1": (SearchP1Reward, SearchP1RewardConfig),
    "oases": (OasesReward, OasesRewardConfig),
    "smartsearch": (SmartSearchReward, SmartSearchRewardConfig),
}


def list_rewards() -> list[str]:
    """Registered reward names (the six methods)."""
    return sorted(_REWARDS)


def get_reward(name: str, settings: dict[str, Any] | None = None, **objects: Any) -> MethodReward:
    """The reward of method `name` with `settings` for its config dataclass; `objects` (e.g. matcher=) go to the class."""
    if name not in _REWARDS:
        close = difflib.get_close_matches(name, list(_REWARDS), n=2, cutoff=0.5)
        raise EvalsuiteError(f"unknown reward {name!r}", hint=f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(list_rewards())}")
    cls, config_cls = _REWARDS[name]
    try:
        config = config_cls(**(settings or {}))
    except (TypeError, ValueError) as exc:
        raise EvalsuiteError(f"bad settings for the {name} reward: {exc}", hint=f"fields: {', '.join(config_cls.__dataclass_fields__)}") from exc
    return cls(config, **objects)


__all__ = [
    "MethodReward", "OasesReward", "ProgressReward", "SearchP1Reward", "SearchR1Reward", "SmartSearchReward",
    "SubSearchReward", "completion_text", "format_valid", "get_reward", "list_rewards",
]
