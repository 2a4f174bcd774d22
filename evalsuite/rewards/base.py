"""The calling convention every training reward follows (TRL's): completions plus dataset columns by keyword.

A reward object maps a batch to one float per completion (`__call__`) and to a per-component breakdown
(`breakdown`) for logging. The trajectory a reward reads comes, in order of preference, from the rollout's own
columns (`turns`: the engine's parsed turns; `model_text`: the model's own tokens only, retrieved text excluded) or,
for completions produced elsewhere, from `parse_trajectory` on the completion text. The answer is always read from
the model's own text, never from the prompt or from retrieved passages.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from evalsuite.protocol.search_r1 import parse_trajectory
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.answer import extract_answer
from evalsuite.runs.schema import Turn

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a plain string, or the concatenated contents of a conversational message list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    raise EvalsuiteError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


@dataclass
class Sample:
    """One completion with the columns a reward reads: its turns, the model's own text, answer, golds and the row."""

    text: str
    turns: list[Turn]
    model_text: str
    answer: str | None
    golds: list[str]
    protocol_errors: list[str]
    row: dict[str, Any]

    @property
    def queries(self) -> list[str]:
        """Every search query of the trajectory, each sub-query counted once."""
        out: list[str] = []
        for turn in self.turns:
            if turn.sub_queries:
                out.extend(turn.sub_queries)
            elif turn.query is not None:
                out.append(turn.query)
        return out

    @property
    def model_turns(self) -> list[Turn]:
        """Turns the model wrote (initial retrievals before any model text excluded)."""
        return [t for t in self.turns if not t.extra.get("initial_retrieval")]


def _as_turns(value: Any) -> list[Turn]:
    return [t if isinstance(t, Turn) else Turn.model_validate(t) for t in value]


def samples(completions: Sequence[Any], columns: dict[str, Any]) -> list[Sample]:
    """Build one Sample per completion; `golden_answers` is required, `turns`/`model_text` are used when present."""
    n = len(completions)
    if "golden_answers" not in columns:
        raise EvalsuiteError(
            "the reward needs a `golden_answers` column",
            hint="the training dataset must keep the task rows' golden_answers",
        )
    for key, value in columns.items():
        if isinstance(value, list) and len(value) != n:
            raise EvalsuiteError(f"column {key!r} has {len(value)} values for {n} completions")
    out = []
    for i, completion in enumerate(completions):
        row = {k: (v[i] if isinstance(v, list) else v) for k, v in columns.items()}
        text = completion_text(completion)
        golds = row["golden_answers"]
        golds = [golds] if isinstance(golds, str) else list(golds or [])
        if row.get("turns") is not None:
            turns = _as_turns(row["turns"])
            recorded_text = row.get("model_text")
            model_text = recorded_text if recorded_text is not None else "".join(t.text for t in turns)
            errors = list(row.get("protocol_errors") or [])
        else:
            parsed = parse_trajectory(text)
            turns, errors, model_text = parsed.turns, parsed.errors, parsed.model_text
        answer = extract_answer(model_text)  # the model's own text: an observation's or a message's tags never answer
        out.append(
            Sample(
                text=text,
                turns=turns,
                model_text=model_text,
                answer=answer,
                golds=golds,
                protocol_errors=errors,
                row=row,
            )
        )
    return out


def format_valid(sample: Sample) -> bool:
    """Search-R1's valid sequence: every model turn reasons, takes
    exactly one action, the last answers, no protocol errors."""
    turns = sample.model_turns
    if not turns or sample.protocol_errors:
        return False
    for index, turn in enumerate(turns):
        last = index == len(turns) - 1
        searched = turn.query is not None or bool(turn.sub_queries)
        if turn.invalid_action or not turn.think:
            return False
        if last and (turn.answer is None or searched):
            return False
        if not last and (turn.answer is not None or not searched):
            return False
    return True


class MethodReward(ABC):
    """A method's reward: `__call__` gives TRL one float per completion, `breakdown` every component as well."""

    name: ClassVar[str]
    components: ClassVar[tuple[str, ...]]
    # the dataclass of its settings (`reward.settings` of a recipe's YAML); `get_reward` builds it
    config_class: ClassVar[type[DataclassInstance]]

    def __init__(self) -> None:
        self._cache: tuple[tuple[str, ...], list[dict[str, float]]] | None = None

    @abstractmethod
    def score_batch(self, batch: list[Sample]) -> list[dict[str, float]]:
        """Each sample's components and `total`."""

    def breakdown(self, completions: Sequence[Any], **columns: Any) -> list[dict[str, float]]:
        """Per completion: every component and `total` (computed once per batch; component functions reuse it)."""
        key = tuple(completion_text(c) for c in completions)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        result = self.score_batch(samples(completions, columns))
        self._cache = (key, result)
        return result

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float]:
        self._cache = None  # the total is computed first in each TRL step: stateful rewards update once per batch
        return [b["total"] for b in self.breakdown(completions, **columns)]

    def trl_reward_funcs(self) -> tuple[list[Callable[..., list[float]]], list[float]]:
        """TRL reward functions and weights: the total (weight
        1) and each component at weight 0, so TRL logs them all."""

        def total(completions, **columns):
            return self(completions, **columns)

        total.__name__ = f"{self.name}/total"
        funcs: list[Callable[..., list[float]]] = [total]
        for component in self.components:
            funcs.append(self._component(component))
        return funcs, [1.0] + [0.0] * len(self.components)

    def _component(self, component: str) -> Callable[..., list[float]]:
        def func(completions, **columns):
            return [b[component] for b in self.breakdown(completions, **columns)]

        func.__name__ = f"{self.name}/{component}"
        return func

    def config(self) -> dict[str, Any]:
        """The settings recorded in the training manifest."""
        return {"name": self.name}
