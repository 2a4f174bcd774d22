"""Linear-time tag parsing shared by every method and baseline: first action block, last answer block, spans.

Regular expressions with lazy `.*?` are quadratic on text with many unclosed opening tags; these helpers use
`str.find` only, so a parser stays fast on adversarial or huge model output and never raises on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TagPair:
    """An opening and a closing marker, e.g. `<search>` / `</search>` or `<|begin_of_query|>` / `<|end_of_query|>`."""

    open: str
    close: str

    @classmethod
    def xml(cls, name: str) -> TagPair:
        return cls(f"<{name}>", f"</{name}>")


@dataclass(frozen=True)
class Block:
    """A complete block found in a text: which pair, its inner content, and where it starts and ends."""

    pair: TagPair
    content: str
    start: int
    end: int


def first_block(text: str, pairs: Sequence[TagPair]) -> Block | None:
    """The leftmost complete block of any pair (the semantics of `re.search(r"<(a|b)>(.*?)</\\1>")`)."""
    best: Block | None = None
    for pair in pairs:
        start = text.find(pair.open)
        if start == -1:
            continue
        inner = start + len(pair.open)
        close = text.find(pair.close, inner)
        if close == -1:
            continue  # no close after the first open means none after any later open either
        if best is None or start < best.start:
            best = Block(pair, text[inner:close], start, close + len(pair.close))
    return best


def last_block(text: str, pair: TagPair) -> str | None:
    """Content of the last complete block, as the last match of `re.findall(open(.*?)close)`; None if there is none."""
    last: str | None = None
    for content in _iter_blocks(text, pair):
        last = content
    return last


def all_blocks(text: str, pair: TagPair, limit: int | None = None) -> list[str]:
    """Contents of the non-overlapping complete blocks, left to right (at most `limit`)."""
    out: list[str] = []
    for content in _iter_blocks(text, pair):
        if limit is not None and len(out) >= limit:
            break
        out.append(content)
    return out


def _iter_blocks(text: str, pair: TagPair):
    position = 0
    while True:
        start = text.find(pair.open, position)
        if start == -1:
            return
        inner = start + len(pair.open)
        close = text.find(pair.close, inner)
        if close == -1:
            return
        yield text[inner:close]
        position = close + len(pair.close)


def cut_after_first(text: str, closes: Sequence[str]) -> str:
    """`text` cut just after the first of `closes` in priority order (Search-R1 `_postprocess_responses`)."""
    for close in closes:
        at = text.find(close)
        if at != -1:
            return text[: at + len(close)]
    return text


def split_subqueries(content: str, separator: str = "##", limit: int = 3) -> tuple[list[str], int]:
    """Non-empty stripped parts of `content` split on `separator`,
    the first `limit` of them, and how many were dropped."""
    parts = [part.strip() for part in content.split(separator)]
    parts = [part for part in parts if part]
    return parts[:limit], max(0, len(parts) - limit)
