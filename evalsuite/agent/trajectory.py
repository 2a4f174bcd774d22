"""Recover the turns of a Search-R1-style response from its full text.

The response interleaves model text with `<information>…</information>` observations. Each stretch of model
text is one turn: its `<think>` spans, its action (`<search>` query or `<answer>`), and the passages of the
observation that followed. Two passage layouts occur in real outputs: Search-R1's `Doc N(Title: t) text`
lines, and raw wiki-18 contents (`"Title"\\ntext`) separated by blank lines (FlashRAG's older template).
Nothing here raises on model text: anything malformed becomes a protocol error string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evalsuite.runs.schema import Passage, Turn

_INFORMATION = re.compile(r"<information>(.*?)</information>", re.DOTALL)
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_SEARCH = re.compile(r"<search>(.*?)</search>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_DOC_MARKER = re.compile(r"Doc (\d+)\(Title: ")
# Search-R1 appends this (as plain text, not an observation) after a turn with no valid action.
INVALID_ACTION_PREFIX = "My previous action is invalid."
_TAGS = ("think", "search", "answer")


@dataclass
class ParsedTrajectory:
    """The turns of a response, its final answer (None when no answer tag) and protocol errors."""

    turns: list[Turn]
    answer: str | None
    errors: list[str] = field(default_factory=list)

    @property
    def queries(self) -> list[str]:
        return [q for turn in self.turns for q in ([turn.query] if turn.query is not None and not turn.sub_queries else turn.sub_queries)]

    @property
    def passages(self) -> list[Passage]:
        return [p for turn in self.turns for p in turn.passages]


def parse_passages(block: str) -> list[Passage]:
    """Split an `<information>` block into passages (Search-R1 `Doc N(Title: …)` markers, else blank-line blocks)."""
    markers = list(_DOC_MARKER.finditer(block))
    if markers:
        passages = []
        for index, marker in enumerate(markers):
            end = markers[index + 1].start() if index + 1 < len(markers) else len(block)
            passages.append(_split_marked_doc(block[marker.end() : end]))
        return passages
    chunks = [chunk.strip() for chunk in re.split(r"\n\s*\n", block) if chunk.strip()]
    passages = []
    for chunk in chunks:
        title, sep, text = chunk.partition("\n")
        if sep:
            passages.append(Passage(title=_unquote(title.strip()), text=text.strip()))
        else:
            passages.append(Passage(title=None, text=chunk))
    return passages


def _split_marked_doc(doc: str) -> Passage:
    """`"Title") text` → Passage; a quoted title ends at the first `")`, a bare one at the first `)`."""
    if doc.startswith('"'):
        close = doc.find('")')
        end, skip = (close + 1, 2) if close != -1 else (-1, 0)
    else:
        end, skip = doc.find(")"), 1
    if end == -1:
        return Passage(title=None, text=doc.strip())
    return Passage(title=_unquote(doc[:end]), text=doc[end + skip :].strip())


def _unquote(title: str) -> str:
    if len(title) >= 2 and title[0] == '"' and title[-1] == '"':
        return title[1:-1]
    return title


def _unclosed(segment: str, tag: str) -> bool:
    return segment.count(f"<{tag}>") > segment.count(f"</{tag}>")


def parse_trajectory(text: str) -> ParsedTrajectory:
    """Parse a full model response (prompt excluded) into turns, answer and protocol errors."""
    errors: list[str] = []
    segments: list[str] = []
    blocks: list[str | None] = []
    position = 0
    for match in _INFORMATION.finditer(text):
        segments.append(text[position : match.start()])
        blocks.append(match.group(1))
        position = match.end()
    tail = text[position:]
    if "<information>" in tail:
        head, _, rest = tail.partition("<information>")
        errors.append("unclosed <information>")
        segments.append(head)
        blocks.append(rest)
    else:
        segments.append(tail)
        blocks.append(None)

    turns: list[Turn] = []
    for index, (segment, block) in enumerate(zip(segments, blocks)):
        stripped = segment.lstrip()
        if stripped.startswith(INVALID_ACTION_PREFIX) and turns:
            turns[-1].invalid_action = True
        if not segment.strip() and block is None:
            continue  # the empty tail after a final observation
        turn = _parse_turn(segment, block, index, errors)
        turns.append(turn)

    model_text = "".join(segments)
    answers = _ANSWER.findall(model_text)
    answer = answers[-1].strip() if answers else None
    if "</answer>" in model_text and text[text.rfind("</answer>") + len("</answer>") :].strip():
        errors.append("text after the answer")
    return ParsedTrajectory(turns=turns, answer=answer, errors=errors)


def _parse_turn(segment: str, block: str | None, index: int, errors: list[str]) -> Turn:
    for tag in _TAGS:
        if _unclosed(segment, tag):
            errors.append(f"turn {index + 1}: unclosed <{tag}>")
    search = _SEARCH.search(segment)
    answers = _ANSWER.findall(segment)
    query = search.group(1).strip() if search else None
    if query is not None and block is None:
        errors.append(f"turn {index + 1}: search without information")
    if block is not None and query is None:
        errors.append(f"turn {index + 1}: information without a search")
    return Turn(
        text=segment,
        think=[span.strip() for span in _THINK.findall(segment)],
        query=query,
        passages=parse_passages(block) if block is not None else [],
        answer=answers[-1].strip() if answers else None,
    )
