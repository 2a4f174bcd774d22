"""SmartSearch: Search-R1's tag protocol with per-query quality recorded as the rollout runs.

Source: ../shared/seeds/004_ab15083f9a5b84ae.txt (Dual-Level Credit Assessment): novelty is rule-based, a search is
redundant when too many of its retrieved documents were already retrieved in earlier rounds; usefulness comes from an
evaluator model that reads the question (and the gold answer at training time) and the history; a query scores 1
only if both hold. Novelty uses `evalsuite.metrics.process` (the same rule the metrics report, threshold K recorded);
usefulness is recorded only when a judge is configured: `SmartSearch(judge=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from evalsuite.methods.search_r1.method import SearchR1
from evalsuite.runs.schema import Turn


class UsefulnessJudge(Protocol):
    """Decides whether a search was necessary and its results address its intent; returns (useful, explanation)."""

    def __call__(self, question: str, history: Sequence[Turn], turn: Turn) -> tuple[bool, str]: ...


class SmartSearch(SearchR1):
    """Search-R1's protocol; every search turn gets `novelty`,
    `doc_overlap` and, with a judge, `usefulness` and `query_score`."""

    name = "smartsearch"
    searches_empty_query = False  # an empty query is no action (Search-R1 would search "")
    source = (
        "SmartSearch paper: Search-R1 prompt and tags; novelty rule "
        "and usefulness judge of its Dual-Level Credit Assessment"
    )
    protocol = (
        "Search-R1 tags; per search turn extra: novelty (doc overlap "
        "with earlier rounds <= K), usefulness (judge), query_score"
    )

    def __init__(self, judge: UsefulnessJudge | None = None, max_overlap: int | None = None):
        from evalsuite.metrics.process import NOVELTY_MAX_OVERLAP

        self.judge = judge
        self.max_overlap = NOVELTY_MAX_OVERLAP if max_overlap is None else max_overlap

    def annotate_search(self, question: str, turns: Sequence[Turn], turn: Turn) -> None:
        from evalsuite.metrics.process import overlap_counts, search_rounds

        rounds = search_rounds([*turns, turn])
        overlap = overlap_counts(rounds)[-1] if rounds else 0
        turn.extra["doc_overlap"] = overlap
        turn.extra["novelty"] = int(overlap <= self.max_overlap)
        turn.extra["novelty_max_overlap"] = self.max_overlap
        if self.judge is None:
            return
        useful, explanation = self.judge(question, turns, turn)
        turn.extra["usefulness"] = int(bool(useful))
        turn.extra["usefulness_explanation"] = explanation
        turn.extra["query_score"] = int(bool(useful) and turn.extra["novelty"] == 1)
