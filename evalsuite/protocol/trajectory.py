"""Recover the turns of a search-agent response from its full text, the way the rollout loop built it.

A response alternates model turns with the text the loop inserted: an observation (Search-R1's
`<information>…</information>`) right after a turn that ends with the search close tag, or the fixed invalid-action
message after a turn with no valid action. Only those are environment text. Everything else is model text: an
`<information>` the model wrote itself (closed or not; a protocol error, never an observation), `<answer>` inside
`<think>`, stray closing tags, a tag cut off by the token budget.

Why the loop's turns can be recovered from the text alone: the loop cuts every generation just after its first search
close tag, so a model turn holds at most one, at its very end, and whatever directly follows it was inserted. The
invalid-action message has a search close tag mid-sentence, so a model cannot write it whole (its turn would end there
and get an observation): an intact message was inserted.

The prediction is the method's answer extraction over the whole response (for Search-R1 the last `<answer>…</answer>`,
what Search-R1 and FlashRAG record), whatever the turns look like.

Every scan is `str.find` based and linear in the text: no lazy-`.*?` regex that goes quadratic on unclosed tags.
A method supplies its markers and functions as a `ResponseProtocol`; `evalsuite.protocol.search_r1` has Search-R1's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from evalsuite.protocol.tags import TagPair, first_block
from evalsuite.runs.schema import Passage, Turn

_SPACE = re.compile(r"\s*")
# A response longer than this many turns is no rollout; the rest is kept as one last turn (the answer stays exact).
MAX_PARSED_TURNS = 256


@dataclass
class Action:
    """The action a model turn took: search (one or more queries), answer, or nothing valid."""

    kind: Literal["search", "answer", "invalid"]
    queries: list[str] = field(default_factory=list)
    answer: str | None = None
    think: list[str] = field(default_factory=list)
    # Method-specific facts about the turn (e.g. Search-P1's plan steps), copied into Turn.extra by the engine.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParsedTrajectory:
    """The turns of a response, its final answer (None when no answer tag) and protocol errors."""

    turns: list[Turn]
    answer: str | None
    errors: list[str] = field(default_factory=list)

    @property
    def queries(self) -> list[str]:
        return [
            q for turn in self.turns for q in (turn.sub_queries or ([turn.query] if turn.query is not None else []))
        ]

    @property
    def passages(self) -> list[Passage]:
        return [p for turn in self.turns for p in turn.passages]

    @property
    def model_text(self) -> str:
        """The model's own text: the turns joined, observations and invalid-action messages left out."""
        return "".join(turn.text for turn in self.turns)


@dataclass(frozen=True)
class ResponseProtocol:
    """What the parser needs of a method: its markers, the loop's inserted texts and its own turn rules."""

    search: TagPair
    answer: TagPair
    observation: TagPair
    thinks: tuple[TagPair, ...]
    invalid_message: str
    # The method's per-turn action parser and final-answer extraction (the engine's own functions).
    parse_action: Callable[[str], Action]
    extract_answer: Callable[[str], str | None]
    parse_observation: Callable[[str], list[Passage]]


@dataclass
class _Piece:
    """One model turn as found in the text: its model text and what the loop inserted after it."""

    text: str
    observation: str | None = None  # the inserted observation's content
    observation_closed: bool = True
    invalid_message: bool = False


class _NextOccurrence:
    """The next occurrence of a fixed string at or after a
    position, searched again only once passed (linear overall)."""

    def __init__(self, text: str, needle: str):
        self.text, self.needle = text, needle
        self.at = text.find(needle) if needle else -1

    def from_(self, position: int) -> int:
        if self.at != -1 and self.at < position:
            self.at = self.text.find(self.needle, position)
        return self.at


def _split_turns(text: str, protocol: ResponseProtocol) -> tuple[list[_Piece], bool]:
    """Cut the response at the loop's inserted texts; the stretches between them are the model turns.

    Also says whether the turn limit cut the parse short (the rest then is one last turn)."""
    pieces: list[_Piece] = []
    close, opening = protocol.search.close, protocol.observation.open
    invalid = _NextOccurrence(text, protocol.invalid_message)
    turn_start = position = 0
    while True:
        if len(pieces) == MAX_PARSED_TURNS - 1:
            pieces.append(_Piece(text[turn_start:]))
            return pieces, True
        search_end = text.find(close, position)
        message = invalid.from_(position)
        if message != -1 and (search_end == -1 or message < search_end):
            # (the message may begin inside the white space skipped after an observation: its turn is then empty)
            pieces.append(_Piece(text[min(turn_start, message) : message], invalid_message=True))
            turn_start = position = message + len(protocol.invalid_message)
            continue
        if search_end == -1:
            break
        after = search_end + len(close)
        start = _skip_space(text, after)
        if not text.startswith(opening, start):
            position = after  # a close tag the loop put nothing after: the final turn, or an answer turn's text
            continue
        inner = start + len(opening)
        end = text.find(protocol.observation.close, inner)
        closed = end != -1
        end = end if closed else len(text)
        pieces.append(_Piece(text[turn_start:after], observation=text[inner:end], observation_closed=closed))
        position = end + len(protocol.observation.close) if closed else len(text)
        turn_start = _skip_space(text, position)
    if text[turn_start:].strip():
        pieces.append(_Piece(text[turn_start:]))
    return pieces, False


def _skip_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    assert match is not None  # \s* matches at every position
    return match.end()


def parse_response(text: str | bytes, protocol: ResponseProtocol) -> ParsedTrajectory:
    """Parse a full model response (prompt excluded) into turns,
    answer and protocol errors; never raises on its text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    turns, errors = _read_turns(text, protocol, with_turns=True)
    return ParsedTrajectory(turns=turns, answer=protocol.extract_answer(text), errors=errors)


def response_errors(text: str, protocol: ResponseProtocol) -> list[str]:
    """`parse_response(text, protocol).errors` without building the turns and their passages, which a run's every
    record asks for (about half of the parse's time)."""
    return _read_turns(text, protocol, with_turns=False)[1]


def _read_turns(text: str, protocol: ResponseProtocol, with_turns: bool) -> tuple[list[Turn], list[str]]:
    """The turns (when `with_turns`) and the protocol errors of a response."""
    errors: list[str] = []
    turns: list[Turn] = []
    answered_at: int | None = None
    pieces, cut_short = _split_turns(text, protocol)
    for number, piece in enumerate(pieces, start=1):
        action = protocol.parse_action(piece.text)
        searched = action  # the search an observation answered: the turn's first search block, if not its action
        if piece.observation is not None:
            if action.kind != "search":
                errors.append(f"turn {number}: an observation after a turn whose action is not a search")
                searched = _search_of(piece.text, protocol)
            if not piece.observation_closed:
                errors.append(f"unclosed {protocol.observation.open}")
        elif action.kind == "search":
            errors.append(f"turn {number}: search without information")
        if searched.kind == "answer" and answered_at is None:
            answered_at = number
        errors.extend(_turn_errors(number, piece.text, protocol))
        if with_turns:
            turns.append(_turn(piece, action, searched, protocol))
    if cut_short:
        errors.append(f"more than {MAX_PARSED_TURNS} turns: the rest is kept as the last turn")
    if answered_at is not None and _continues_after_answer(pieces, answered_at, protocol.answer):
        errors.append("text after the answer")
    return turns, errors


def _turn(piece: _Piece, action: Action, searched: Action, protocol: ResponseProtocol) -> Turn:
    turn = Turn(
        text=piece.text,
        think=list(action.think),
        answer=action.answer,
        invalid_action=piece.invalid_message,
        extra=dict(action.extra),
    )
    if piece.observation is not None:
        turn.passages = protocol.parse_observation(piece.observation)
    if searched.kind == "search":
        turn.query = searched.queries[0] if len(searched.queries) == 1 else None
        turn.sub_queries = searched.queries if len(searched.queries) > 1 else []
    return turn


def _search_of(text: str, protocol: ResponseProtocol) -> Action:
    """The turn's first search block as an action (the query
    an observation answered, when an answer block came first)."""
    block = first_block(text, (protocol.search,))
    if block is None:
        return Action("invalid")
    action = protocol.parse_action(text[block.start :])
    return action if action.kind == "search" else Action("invalid")


def _turn_errors(number: int, text: str, protocol: ResponseProtocol) -> list[str]:
    errors = []
    for pair in (*protocol.thinks, protocol.search, protocol.answer):
        if text.count(pair.open) > text.count(pair.close):
            errors.append(f"turn {number}: unclosed {pair.open}")
    if protocol.observation.open in text:
        # The model wrote an observation tag itself: model text, never passages.
        errors.append(f"turn {number}: information without a search")
    return errors


def _continues_after_answer(pieces: list[_Piece], number: int, answer: TagPair) -> bool:
    """Whether anything but white space follows the first answer turn's answer block."""
    piece = pieces[number - 1]
    block = first_block(piece.text, (answer,))
    tail_of_turn = piece.text[block.end :] if block is not None else ""
    return bool(tail_of_turn.strip()) or piece.observation is not None or piece.invalid_message or number < len(pieces)
