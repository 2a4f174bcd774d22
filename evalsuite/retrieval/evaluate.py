"""Retrieval quality against supporting paragraphs (HotpotQA-style `supporting_facts` titles)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from evalsuite.retrieval.types import Hit


def supporting_titles(metadata: dict[str, Any]) -> set[str]:
    """The titles of a row's supporting paragraphs: `supporting_facts`
    (HotpotQA, 2Wiki), else `is_supporting` contexts."""
    facts = metadata.get("supporting_facts")
    if facts:
        return {str(fact[0]) for fact in facts}
    titles = set()
    for paragraph in metadata.get("context") or metadata.get("paragraphs") or []:
        if isinstance(paragraph, dict) and paragraph.get("is_supporting"):
            titles.add(str(paragraph.get("title")))
    return titles


def supporting_recall(hits: Iterable[Hit], titles: set[str]) -> float:
    """Fraction of supporting titles among the retrieved passages' titles (1.0 when there are none to find)."""
    if not titles:
        return 1.0
    retrieved = {hit.title for hit in hits}
    return len(titles & retrieved) / len(titles)


@dataclass
class SupportingRecall:
    """Mean supporting-paragraph recall@k and the share of questions with every supporting paragraph retrieved."""

    k: int
    questions: int
    recall: float
    all_supporting: float


def evaluate_supporting(results: list[list[Hit]], title_sets: list[set[str]], k: int) -> SupportingRecall:
    """Supporting-paragraph recall@k and all-supporting@k over questions (hits beyond rank k are ignored)."""
    if len(results) != len(title_sets):
        raise ValueError(f"{len(results)} result lists for {len(title_sets)} questions")
    recalls = [supporting_recall(hits[:k], titles) for hits, titles in zip(results, title_sets)]
    n = len(recalls)
    return SupportingRecall(
        k=k,
        questions=n,
        recall=sum(recalls) / n if n else 0.0,
        all_supporting=sum(1 for r in recalls if r == 1.0) / n if n else 0.0,
    )


def gold_passage_ids(metadata: dict[str, Any]) -> set[str]:
    """Corpus ids of a row's supporting paragraphs (`corpus_id` of `is_supporting` contexts in the *_ctx files)."""
    return {
        str(paragraph["corpus_id"])
        for paragraph in metadata.get("context") or metadata.get("paragraphs") or []
        if isinstance(paragraph, dict) and paragraph.get("is_supporting") and paragraph.get("corpus_id") is not None
    }


def passage_recall(results: list[list[Hit]], gold: list[set[str]], k: int) -> float:
    """Mean fraction of each question's gold passage ids among its top-`k` hits (questions without gold skipped)."""
    scored = [(hits, ids) for hits, ids in zip(results, gold) if ids]
    if not scored:
        return 0.0
    return sum(len(ids & {hit.doc_id for hit in hits[:k]}) / len(ids) for hits, ids in scored) / len(scored)
