"""Passages as the model reads them in an observation, and back as the run directory records them.

A retrieval hit's `contents` is wiki-18's `"Title"\\ntext`. Search-R1 shows each hit as `Doc i(Title: t) text`
inside its observation; `parse_passages` reads that layout back, and also raw wiki-18 contents separated by blank
lines (FlashRAG's older template). Both layouts occur in real Search-R1 outputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from evalsuite.runs.schema import Passage

_DOC_MARKER = re.compile(r"Doc (\d+)\(Title: ")
_BLANK_LINE = re.compile(r"\n\s*\n")


class HitLike(Protocol):
    """What the engine needs of a retrieval hit (`evalsuite.retrieval.Hit` has it)."""

    doc_id: str
    contents: str
    score: float


def split_contents(contents: str) -> tuple[str, str]:
    """wiki-18 `"Title"\\ntext` → (first line, rest), as Search-R1's `_passages2string` splits it."""
    lines = contents.split("\n")
    return lines[0], "\n".join(lines[1:])


def hit_passage(hit: HitLike) -> Passage:
    """A retrieval hit as the run directory records it (title without its wiki-18 quotes)."""
    title, text = split_contents(hit.contents)
    return Passage(title=_unquote(title) or None, text=text, doc_id=str(hit.doc_id), score=float(hit.score))


def format_passages(hits: Sequence[HitLike], truncate: Callable[[str], str] = lambda text: text) -> str:
    """`Doc i(Title: t) text\\n` per hit, as Search-R1's `_passages2string` writes it (t keeps the wiki-18 quotes)."""
    out = ""
    for index, hit in enumerate(hits):
        title, text = split_contents(hit.contents)
        out += f"Doc {index + 1}(Title: {title}) {text}\n"
    return truncate(out)


def parse_passages(block: str) -> list[Passage]:
    """Split an observation's content into passages (`Doc N(Title: …)` markers, else blank-line blocks)."""
    markers = list(_DOC_MARKER.finditer(block))
    if markers:
        passages = []
        for index, marker in enumerate(markers):
            end = markers[index + 1].start() if index + 1 < len(markers) else len(block)
            passages.append(_split_marked_doc(block[marker.end() : end]))
        return passages
    passages = []
    for chunk in (chunk.strip() for chunk in _BLANK_LINE.split(block)):
        if not chunk:
            continue
        title, sep, text = chunk.partition("\n")
        passages.append(
            Passage(title=_unquote(title.strip()), text=text.strip()) if sep else Passage(title=None, text=chunk)
        )
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
