"""What a method is (prompt, action parser, observation formatter, answer extractor) and the registry of methods.

The rollout engine only talks to this interface, so a new method (SubSearch, OASES, Search-P1...) registers a
subclass and never touches the engine.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from evalsuite.errors import EvalsuiteError
from evalsuite.protocol import search_r1
from evalsuite.protocol.passages import HitLike
from evalsuite.protocol.trajectory import Action, ParsedTrajectory, ResponseProtocol, parse_response, response_errors
from evalsuite.registry import Registry
from evalsuite.runs.schema import Turn

# The interface a method is written against; Action and HitLike are defined in evalsuite.protocol.
__all__ = ["Action", "ChatRenderer", "HitLike", "Method", "get_method", "list_methods", "register_method"]


class ChatRenderer(Protocol):
    def __call__(self, messages: list[dict[str, str]]) -> str | None: ...


class Method(ABC):
    """A search agent: its protocol (prompt, actions, observations) and answer extraction. Prompt styles are named
    (e.g. base, instruct) and hashed into the manifest."""

    name: str  # the registry name, e.g. "search-r1"
    stop: tuple[str, ...]  # stop strings of every generation
    styles: tuple[str, ...]  # prompt styles; the first is the base-model style, the second (if any) the chat style
    # What `evalsuite methods` shows: "method" or "baseline", where the prompt comes from, the protocol in one line
    # (empty source and protocol: the module's and the class's docstrings).
    kind: str = "method"
    source: str = ""
    protocol: str = ""
    # whether it searches (a run without --retriever is refused unless the user passes `--retriever none`)
    retrieves: bool = True

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
            raise EvalsuiteError(
                f"method {self.name!r} has no prompt style {style!r}",
                hint=f"use one of: auto, {', '.join(self.styles)}",
            )
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
        """The final answer in `response`; None when there is none. The engine passes the model's own text (its turns
        joined, observations left out); `parse` passes a recorded file's whole response, its writer's convention."""

    def info(self, style: str) -> dict[str, Any]:
        return {"name": self.name, "style": style, "stop": list(self.stop), "template_hash": self.template_hash(style)}

    # Optional hooks. The defaults keep the plain Search-R1 loop; baselines and methods override what they need.

    def initial_queries(self, question: str) -> list[str]:
        """Queries retrieved before the first turn (naive RAG, IRCoT); their hits go to `prompt_with_passages`."""
        return []

    def prompt_with_passages(
        self,
        question: str,
        style: str,
        chat: ChatRenderer,
        results: Sequence[Sequence[HitLike]],
        truncate: Callable[[str], str],
    ) -> str:
        """The initial prompt when `initial_queries` retrieved something (one hit list per query)."""
        return self.prompt(question, style, chat)

    def condense_prompt(
        self,
        question: str,
        response: str,
        action: Action,
        results: Sequence[Sequence[HitLike]],
        style: str,
        chat: ChatRenderer,
        truncate: Callable[[str], str],
    ) -> str | None:
        """A prompt for an extra model call that condenses retrieved documents before they enter the chain
        (Search-o1's reason-in-documents); None (the default) appends `observation` directly."""
        return None

    def condensed_observation(self, action: Action, condensed: str) -> str:
        """The text appended after a search whose documents were condensed into `condensed` (the default: that text)."""
        return condensed

    def annotate_search(self, question: str, turns: Sequence[Turn], turn: Turn) -> None:
        """Record per-query facts on a search turn once its passages are known (`turns` are the earlier turns)."""

    def protocol_errors(self, response: str, turns: Sequence[Turn]) -> list[str]:
        """Where the response breaks this method's protocol, as
        `parse` finds it (without building its turns); methods with other markers override this."""
        return response_errors(response, self.response_protocol())

    def response_protocol(self) -> ResponseProtocol:
        """What `parse` reads a response with: Search-R1's tags, with this method's action parser, invalid-action
        message and answer extraction. Methods with other markers override this."""
        return search_r1.response_protocol(self.parse_action, self.extract_answer, self.invalid_observation())

    def parse(self, response: str | bytes) -> ParsedTrajectory:
        """Re-derive the turns (queries, passages), the prediction and the protocol errors of a full response (prompt
        excluded), as the rollout loop built it. The prediction is `extract_answer(response)` over the whole response,
        the convention of the Search-R1 and FlashRAG files we import; our own runs read the model's text only
        (`agent.engine.model_text`, which `ParsedTrajectory.model_text` recovers from the text)."""
        return parse_response(response, self.response_protocol())


# Methods of papers that need no method of their own: the hint names the one to use.
NO_OWN_METHOD = {"zerosearch": "ZeroSearch checkpoints use Search-R1's tags: pass --method search-r1"}


def _check_factory(name: str, value: Any) -> Callable[[], Method]:
    if not callable(value):
        raise EvalsuiteError(
            f"method {name!r} is a {type(value).__name__}, not a Method subclass or a function returning a Method",
            hint="point the entry point at a Method subclass",
        )
    return value


# Every method by its stable name, as a factory (a Method subclass or a function). The methods of the papers live in
# their packages (`evalsuite.methods.<name>`, which name them in `PARTS`); the inference-only baselines are listed
# here. Both are lazy `module:factory` targets: a method's module is imported when the method is first asked for, so
# this registry imports no method module (they import it, never the other way round).
METHODS: Registry[Callable[[], Method]] = Registry(
    "method", check=_check_factory, hints=NO_OWN_METHOD, packaged="method"
)
for _name, _target in {
    # inference-only baselines (the repository's baselines/ folder)
    "direct": "evalsuite.baselines.direct:Direct",
    "cot": "evalsuite.baselines.cot:ChainOfThought",
    "naive-rag": "evalsuite.baselines.naive_rag:NaiveRAG",
    "ircot": "evalsuite.baselines.ircot:IRCoT",
    "search-o1": "evalsuite.baselines.search_o1:SearchO1",
}.items():
    METHODS.register(_name, _target)


def register_method(name: str, factory: str | Callable[[], Method], *, replace: bool = False) -> None:
    """Register a method under a stable name: a factory (a Method subclass or a function), or a lazy `module:factory`.
    A different method under a taken name is refused unless `replace=True`."""
    METHODS.register(name, factory, replace=replace)


def check_method(name: str) -> None:
    """Refuse an unknown method name (before anything is loaded): a did-you-mean hint, or the method to use."""
    METHODS.check(name)


def get_method(name: str) -> Method:
    """A fresh method object by name; unknown names get a did-you-mean hint."""
    method = METHODS.get(name)()
    if not isinstance(method, Method):
        raise EvalsuiteError(
            f"method {name!r} made a {type(method).__name__}, not a Method", hint="its factory must return a Method"
        )
    return method


def list_methods() -> list[str]:
    return sorted(METHODS.names())
