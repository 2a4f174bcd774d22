"""What a method is (prompt, action parser, observation formatter, answer extractor) and the registry of methods.

The rollout engine only talks to this interface, so a new method (SubSearch, OASES, Search-P1...) registers a
subclass and never touches the engine.
"""

from __future__ import annotations

import difflib
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import Passage, Turn

if TYPE_CHECKING:
    from evalsuite.agent.trajectory import ParsedTrajectory, ResponseProtocol


class HitLike(Protocol):
    """What the engine needs of a retrieval hit (`evalsuite.retrieval.Hit` has it)."""

    doc_id: str
    contents: str
    score: float


class ChatRenderer(Protocol):
    def __call__(self, messages: list[dict[str, str]]) -> str | None: ...


@dataclass
class Action:
    """The action a model turn took: search (one or more queries), answer, or nothing valid."""

    kind: Literal["search", "answer", "invalid"]
    queries: list[str] = field(default_factory=list)
    answer: str | None = None
    think: list[str] = field(default_factory=list)
    # Method-specific facts about the turn (e.g. Search-P1's plan steps), copied into Turn.extra by the engine.
    extra: dict[str, Any] = field(default_factory=dict)


def split_contents(contents: str) -> tuple[str, str]:
    """wiki-18 `"Title"\\ntext` → (first line, rest), as Search-R1's `_passages2string` splits it."""
    lines = contents.split("\n")
    return lines[0], "\n".join(lines[1:])


def hit_passage(hit: HitLike) -> Passage:
    """A retrieval hit as the run directory records it (title without its wiki-18 quotes)."""
    title, text = split_contents(hit.contents)
    if len(title) >= 2 and title[0] == '"' and title[-1] == '"':
        title = title[1:-1]
    return Passage(title=title or None, text=text, doc_id=str(hit.doc_id), score=float(hit.score))


class Method(ABC):
    """A search-agent protocol. Prompt styles are named (e.g. base, instruct) and hashed into the manifest."""

    name: str
    stop: tuple[str, ...]
    styles: tuple[str, ...]

    @abstractmethod
    def prompt(self, question: str, style: str, chat: ChatRenderer) -> str:
        """The full initial prompt text for `question` in `style` (`chat` renders the model's chat template)."""

    @abstractmethod
    def template_source(self, style: str) -> str:
        """The template text of `style`, hashed into the manifest so a prompt change is visible."""

    def resolve_style(self, style: str, has_chat_template: bool) -> str:
        """`auto` → the chat style when the model has a chat template, else the base style."""
        if style == "auto":
            return self.styles[1] if has_chat_template and len(self.styles) > 1 else self.styles[0]
        if style not in self.styles:
            raise EvalsuiteError(f"method {self.name!r} has no prompt style {style!r}", hint=f"use one of: auto, {', '.join(self.styles)}")
        return style

    def template_hash(self, style: str) -> str:
        return hashlib.sha256(self.template_source(style).encode("utf-8")).hexdigest()

    def postprocess(self, text: str) -> str:
        """Cut a continuation after its first stop string (the backend may run past it)."""
        cut = None
        for stop in self.stop:
            at = text.find(stop)
            if at != -1:
                cut = text[: at + len(stop)]
                break
        return cut if cut is not None else text

    @abstractmethod
    def parse_action(self, text: str) -> Action:
        """The action of one model turn."""

    @abstractmethod
    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        """The text appended after a search turn; `results` has one hit list per query; `truncate` cuts passage text."""

    @abstractmethod
    def invalid_observation(self) -> str:
        """The text appended after a turn with no valid action."""

    @abstractmethod
    def extract_answer(self, response: str) -> str | None:
        """The final answer from the model's response (never the prompt); None when there is none."""

    def info(self, style: str) -> dict[str, Any]:
        return {"name": self.name, "style": style, "stop": list(self.stop), "template_hash": self.template_hash(style)}

    # Optional hooks. The defaults keep the plain Search-R1 loop; baselines and methods override what they need.

    def initial_queries(self, question: str) -> list[str]:
        """Queries retrieved before the first turn (naive RAG, IRCoT); their hits go to `prompt_with_passages`."""
        return []

    def prompt_with_passages(
        self, question: str, style: str, chat: ChatRenderer, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]
    ) -> str:
        """The initial prompt when `initial_queries` retrieved something (one hit list per query)."""
        return self.prompt(question, style, chat)

    def condense_prompt(
        self, question: str, response: str, action: Action, results: Sequence[Sequence[HitLike]], style: str, chat: ChatRenderer, truncate: Callable[[str], str]
    ) -> str | None:
        """A prompt for an extra model call that condenses retrieved documents before they enter the chain
        (Search-o1's reason-in-documents); None (the default) appends `observation` directly."""
        return None

    def condensed_observation(self, action: Action, condensed: str) -> str:
        """The text appended after a search whose documents were condensed into `condensed`."""
        raise NotImplementedError(f"method {self.name!r} asked for condensation but formats no condensed observation")

    def annotate_search(self, question: str, turns: Sequence[Turn], turn: Turn) -> None:
        """Record per-query facts on a search turn once its passages are known (`turns` are the earlier turns)."""

    def protocol_errors(self, response: str, turns: Sequence[Turn]) -> list[str]:
        """Where the response breaks this method's protocol, as `parse` finds it; methods with other markers override this."""
        return self.parse(response).errors

    def response_protocol(self) -> ResponseProtocol:
        """What `parse` reads a response with: Search-R1's tags, with this method's action parser, invalid-action
        message and answer extraction. Methods with other markers override this."""
        from evalsuite.agent.methods.tags import TagPair
        from evalsuite.agent.trajectory import ResponseProtocol, parse_passages

        return ResponseProtocol(
            search=TagPair.xml("search"), answer=TagPair.xml("answer"), observation=TagPair.xml("information"),
            thinks=(TagPair.xml("think"),), invalid_message=self.invalid_observation(), parse_action=self.parse_action,
            extract_answer=self.extract_answer, parse_observation=parse_passages,
        )

    def parse(self, response: str | bytes) -> ParsedTrajectory:
        """Re-derive the turns (queries, passages), the prediction and the protocol errors of a full response (prompt
        excluded), as the rollout loop built it: the prediction is exactly `extract_answer(response)`."""
        from evalsuite.agent.trajectory import parse_response

        return parse_response(response, self.response_protocol())


_METHODS: dict[str, Callable[[], Method]] = {}


def register_method(name: str, factory: Callable[[], Method]) -> None:
    """Register a method factory under a stable name."""
    _METHODS[name] = factory


def get_method(name: str) -> Method:
    """A fresh method object by name; unknown names get a did-you-mean hint."""
    _register_builtins()

    if name not in _METHODS:
        close = difflib.get_close_matches(name, list(_METHODS), n=2, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"known methods: {', '.join(sorted(_METHODS))}"
        raise EvalsuiteError(f"unknown method {name!r}", hint=hint)
    return _METHODS[name]()


def list_methods() -> list[str]:
    _register_builtins()
    return sorted(_METHODS)


def _register_builtins() -> None:
    # Importing these modules registers the reference method, the seed papers' methods and the baselines.
    import importlib

    import evalsuite.baselines  # noqa: F401
    import evalsuite.agent.search_r1  # noqa: F401
    from evalsuite.agent.methods import BUILTIN_METHOD_MODULES

    for module in BUILTIN_METHOD_MODULES:
        importlib.import_module(f"evalsuite.agent.methods.{module}")
