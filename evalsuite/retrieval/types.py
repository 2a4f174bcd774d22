"""The values every retriever shares: a passage (`Document`), a search result (`Hit`) and the `Retriever` protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


def split_contents(contents: str) -> tuple[str, str]:
    """Title and text of a wiki-18 `contents` string (`"Title"\\ntext`), parsed exactly as Search-R1 does.

    The title is the first line with surrounding double quotes stripped; the text is everything after the first
    newline (empty when there is none).
    """
    first, _, rest = contents.partition("\n")
    return first.strip('"'), rest


def join_contents(title: str, text: str) -> str:
    """The wiki-18 `contents` string for a title and a text: `"Title"\\ntext`."""
    return f'"{title}"\n{text}'


# Four typed fields, shaped like other frozen records (stats.compare.Estimate); nothing to share.
@dataclass(frozen=True)
class Document:
    """One corpus passage: its id, title, text and the wiki-18 `contents` string."""

    id: str
    title: str
    text: str
    contents: str


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: corpus id, wiki-18 `contents`, retriever score and 1-based rank within its query."""

    doc_id: str
    contents: str
    score: float
    rank: int

    @property
    def title(self) -> str:
        """The passage title, without the surrounding quotes (Search-R1's parse of `contents`)."""
        return split_contents(self.contents)[0]

    @property
    def text(self) -> str:
        """The passage text after the title line."""
        return split_contents(self.contents)[1]

    def document(self) -> dict[str, str]:
        """The passage as Search-R1's retrieval server returns it: `{"id", "contents"}`."""
        return {"id": self.doc_id, "contents": self.contents}

    def to_json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "contents": self.contents, "score": self.score, "rank": self.rank}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Hit":
        return cls(
            doc_id=str(obj["doc_id"]), contents=str(obj["contents"]), score=float(obj["score"]), rank=int(obj["rank"])
        )


def check_k(k: object) -> int:
    """`k` as an int, or a `ValueError` unless it is a positive integer (booleans and floats are refused)."""
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise ValueError(f"k must be a positive integer, got {k!r}")
    value = int(k.__index__())  # type: ignore[attr-defined]
    if value < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return value


@runtime_checkable
class Retriever(Protocol):
    """What the agent, the baselines and the trainers search through (BM25, dense, or the HTTP client)."""

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The top-`k` hits for each query, best first; one list per query, in query order."""
        ...

    def info(self) -> dict[str, Any]:
        """The index manifest, with at least `index_hash` and `corpus_hash`."""
        ...
