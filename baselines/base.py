"""What the inference-only baselines share: chat messages rendered per style, answer markers, no tags to repair."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from evalsuite.agent.method import Action, ChatRenderer, HitLike, Method
from evalsuite.agent.tag_method import invalid_turn_errors, render
from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import Turn

# IRCoT's answer marker (FlashRAG `ircot_pred_parse`), also used by our CoT prompt.
ANSWER_MARKER = "So the answer is:"


def first_line(text: str) -> str | None:
    """The first non-empty line, stripped (FlashRAG `basic_pred_parse`); None for blank text."""
    for line in text.split("\n"):
        if line.strip():
            return line.strip()
    return None


def after_marker(text: str, marker: str = ANSWER_MARKER) -> str | None:
    """The first line after the first `marker` (FlashRAG `ircot_pred_parse`, cut to one line); None without the marker."""
    at = text.find(marker)
    if at == -1:
        return None
    rest = text[at + len(marker) :].strip()
    return rest.split("\n", 1)[0].strip()


def boxed(text: str) -> str | None:
    r"""Content of the last `\boxed{…}` with balanced braces, `\text{…}` unwrapped (Search-o1's answer format)."""
    start = text.rfind("\\boxed{")
    if start == -1:
        return None
    depth, position = 1, start + len("\\boxed{")
    for index in range(position, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                content = text[position:index].strip()
                if content.startswith("\\text{") and content.endswith("}"):
                    content = content[len("\\text{") : -1].strip()
                return content
    return None


class Baseline(Method):
    """An inference-only method; subclasses give `messages`, the answer rule and, if they search, the observation."""

    kind = "baseline"
    styles: tuple[str, ...] = ("base", "instruct")
    stop: tuple[str, ...] = ()

    system: str = ""
    user: str = "Question: {question}"

    def messages(self, question: str) -> list[dict[str, str]]:
        """A system message and a user message with the question (FlashRAG's `PromptTemplate` layout)."""
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user.format(question=question)}]

    def template_source(self, style: str) -> str:
        return f"[{style}] " + json.dumps(self.messages("{question}"), ensure_ascii=False)

    def prompt(self, question: str, style: str, chat: ChatRenderer) -> str:
        if style not in self.styles:
            raise EvalsuiteError(f"{self.name} has no prompt style {style!r}", hint=f"use one of: auto, {', '.join(self.styles)}")
        return render(self.messages(question), style, chat, self.name)

    def protocol_errors(self, response: str, turns: Sequence[Turn]) -> list[str]:
        return invalid_turn_errors(turns)  # free-text baselines have no markers to check

    def invalid_observation(self) -> str:
        return ""


class OneTurnBaseline(Baseline):
    """A baseline that answers in its first turn: the whole turn is the answer (`extract_answer`), so it never searches
    mid-chain and no observation ever follows a turn."""

    def parse_action(self, text: str) -> Action:
        return Action("answer", answer=self.extract_answer(text) or "")

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        raise RuntimeError(f"baseline {self.name!r} answers in one turn; parse_action never asks for a search")
