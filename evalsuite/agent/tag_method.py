"""A tag protocol as data: search and answer markers, think markers, chat messages, an observation wrapper.

SubSearch, OASES, Search-P1 and R1-Searcher are instances that change only these pieces; the rollout loop is the
engine's. Every parser here goes through `tags.py`, so malformed text becomes an invalid action, never an exception.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from evalsuite.agent.method import Action, ChatRenderer, Method
from evalsuite.protocol.tags import TagPair, all_blocks, cut_after_first, first_block, last_block
from evalsuite.protocol.passages import parse_passages
from evalsuite.protocol.trajectory import ResponseProtocol
from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import Passage, Turn

# The worked example of the `base-1shot` style (small base models need one, docs/agent.md).
DEMO_QUESTION = "In which city is the Colosseum?"
DEMO_QUERY = "Colosseum"
DEMO_DOC = '"Colosseum"\nThe Colosseum is an elliptical amphitheatre in the centre of the city of Rome, Italy.'
DEMO_THOUGHT = "I need to find where the Colosseum is."
DEMO_CONCLUSION = "The Colosseum is in Rome."
DEMO_ANSWER = "Rome"


@dataclass
class DemoHit:
    """A fixed retrieval hit used only to render the one-shot demonstration."""

    doc_id: str = "demo"
    contents: str = DEMO_DOC
    score: float = 1.0


def invalid_turn_errors(turns: Sequence[Turn]) -> list[str]:
    """One error per model turn that took no valid action (the engine marked it `invalid_action`)."""
    model_turns = [t for t in turns if not t.extra.get("initial_retrieval")]
    return [f"turn {i}: no valid action" for i, t in enumerate(model_turns, start=1) if t.invalid_action]


def render_plain(messages: Sequence[dict[str, str]]) -> str:
    """Messages as one raw prompt for base models: contents joined by a blank line (FlashRAG `PromptTemplate`)."""
    return "\n\n".join(m["content"] for m in messages if m["content"])


def render(messages: list[dict[str, str]], style: str, chat: ChatRenderer, method: str) -> str:
    """`base`: plain text; `instruct`: the model's chat template (an error if it has none)."""
    if style == "instruct":
        rendered = chat(messages)
        if rendered is None:
            raise EvalsuiteError(
                f"prompt style 'instruct' of method {method!r} needs a chat template, and this model has none",
                hint="use --prompt-style base (or base-1shot for small base models)",
            )
        return rendered
    return render_plain(messages)


class TagMethod(Method):
    """A method defined by its markers and prompt; subclasses set the class attributes and `messages`."""

    search: TagPair = TagPair.xml("search")
    answer: TagPair = TagPair.xml("answer")
    thinks: tuple[TagPair, ...] = (TagPair.xml("think"),)
    # The markers `observation` wraps the passages in (what `parse` recognises as inserted after a search).
    observation_tags: TagPair = TagPair.xml("information")
    styles: tuple[str, ...] = ("base", "instruct", "base-1shot")
    invalid_message: str = ""

    @property
    def stop(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.search.close, self.answer.close)

    @abstractmethod
    def messages(self, question: str) -> list[dict[str, str]]:
        """The chat messages of the initial prompt."""

    def template_source(self, style: str) -> str:
        text = json.dumps(self.messages("{question}"), ensure_ascii=False)
        if style == "base-1shot":
            return self.one_shot_demo() + text
        return f"[{style}] {text}"

    def prompt(self, question: str, style: str, chat: ChatRenderer) -> str:
        if style not in self.styles:
            raise EvalsuiteError(
                f"{self.name} has no prompt style {style!r}", hint=f"use one of: auto, {', '.join(self.styles)}"
            )
        if style == "base-1shot":
            return self.one_shot_demo() + render_plain(self.messages(question))
        return render(self.messages(question), style, chat, self.name)

    def one_shot_demo(self) -> str:
        """A complete worked example in this method's own protocol: think, search, observation, answer."""
        think = self.thinks[0]
        turn1 = f"{think.open} {DEMO_THOUGHT} {think.close}\n{self.search.open} {self.demo_query()} {self.search.close}"
        observation = self.observation(self.parse_action(turn1), [[DemoHit()]], lambda text: text)
        turn2 = (
            f"{think.open} {DEMO_CONCLUSION} {think.close}\n{self.answer.open} {DEMO_ANSWER} {self.answer.close}\n\n"
        )
        return render_plain(self.messages(DEMO_QUESTION)) + turn1 + observation + turn2

    def demo_query(self) -> str:
        return DEMO_QUERY

    def postprocess(self, text: str) -> str:
        return cut_after_first(text, (self.search.close, self.answer.close))

    def parse_action(self, text: str) -> Action:
        think = [span.strip() for pair in self.thinks for span in all_blocks(text, pair, limit=50)]
        block = first_block(text, (self.search, self.answer))
        if block is None:
            return Action("invalid", think=think)
        content = block.content.strip()
        if block.pair == self.answer:
            return Action("answer", answer=content, think=think)
        queries, extra = self.queries(content)
        if not queries:
            return Action("invalid", think=think, extra={"invalid_reason": "empty query", **extra})
        return Action("search", queries=queries, think=think, extra=extra)

    def protocol_errors(self, response: str, turns: Sequence[Turn]) -> list[str]:
        """This method's markers checked on the engine's turns: turns without a valid action, and unclosed markers
        (a turn cut by its token budget)."""
        errors = invalid_turn_errors(turns)
        model_turns = [t for t in turns if not t.extra.get("initial_retrieval")]
        for index, turn in enumerate(model_turns, start=1):
            for pair in (self.search, self.answer, *self.thinks):
                if turn.text.count(pair.open) > turn.text.count(pair.close):
                    errors.append(f"turn {index}: unclosed {pair.open}")
        return errors

    def queries(self, content: str) -> tuple[list[str], dict]:
        """The queries of a search block's stripped content, and facts to record about them."""
        return ([content] if content else []), {}

    def parse_observation(self, content: str) -> list[Passage]:
        """The passages of an observation's content (between `observation_tags`), as `observation` laid them out."""
        return parse_passages(content)

    def response_protocol(self) -> ResponseProtocol:
        return ResponseProtocol(
            search=self.search,
            answer=self.answer,
            observation=self.observation_tags,
            thinks=self.thinks,
            invalid_message=self.invalid_message,
            parse_action=self.parse_action,
            extract_answer=self.extract_answer,
            parse_observation=self.parse_observation,
        )

    def invalid_observation(self) -> str:
        return self.invalid_message

    def extract_answer(self, response: str) -> str | None:
        found = last_block(response, self.answer)
        return found.strip() if found is not None else None
