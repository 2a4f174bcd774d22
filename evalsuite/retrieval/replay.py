"""The replay retriever (`--retriever replay`): the passages a recording's retriever gave for each query.

With the replay backend (`evalsuite.models.replay`) a whole recorded run replays with zero model and index time:
deterministic tests and overhead benchmarks on real model text.
"""

from __future__ import annotations

import hashlib
from typing import Any

from evalsuite.protocol.passages import parse_passages
from evalsuite.protocol.recording import RecordedExample
from evalsuite.protocol.search_r1 import SEARCH
from evalsuite.protocol.tags import first_block
from evalsuite.retrieval.types import Hit


class ReplayRetriever:
    """Returns the passages a recording's retriever gave for each query."""

    def __init__(self, examples: dict[str, RecordedExample]):
        self.by_query: dict[str, list[Hit]] = {}
        for example in examples.values():
            for text, block in zip(example.turns, example.observations):
                query = _recorded_query(text)
                if block is not None and query is not None:
                    self.by_query.setdefault(query, _hits_from_block(block))

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Recorded hits per query (at most k); a query never recorded gets no passages."""
        return [self.by_query.get(query.strip(), [])[:k] for query in queries]

    def info(self) -> dict[str, Any]:
        digest = hashlib.sha256()
        for query in sorted(self.by_query):
            digest.update(query.encode("utf-8"))
            for hit in self.by_query[query]:
                digest.update(hit.contents.encode("utf-8"))
        return {"kind": "replay", "queries": len(self.by_query), "index_hash": digest.hexdigest()}


def _hits_from_block(block: str) -> list[Hit]:
    hits = []
    for rank, passage in enumerate(parse_passages(block), start=1):
        # wiki-18 contents put the title on the first line (quoted in wiki-18; some corpora don't quote it).
        title = passage.title or ""
        if f'(Title: "{title}")' in block:
            title = f'"{title}"'
        contents = f"{title}\n{passage.text}"
        doc_id = "replay:" + hashlib.sha1(contents.encode("utf-8")).hexdigest()[:12]
        hits.append(Hit(doc_id=doc_id, contents=contents, score=0.0, rank=rank))
    return hits


def _recorded_query(text: str) -> str | None:
    block = first_block(text, (SEARCH,))
    return block.content.strip() if block is not None else None
