"""Which policy queries match which reference queries (Progress teacher queries, Search-P1 reference-plan steps).

The papers match with an LLM judge on semantics and granularity (Progress §3.2; Search-P1's evaluator). `JudgeMatcher`
does that through `evalsuite.judges` (panel, majority vote, SQLite cache, so repeated pairs are free across steps).
`LexicalMatcher` is the judge-free stand-in for smoke runs and tests: normalized token Jaccard at a threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from evalsuite.metrics.answer import normalize_answer


class Matcher(Protocol):
    """A policy-by-reference boolean match matrix for one question."""

    name: str

    def __call__(self, question: str, policy: Sequence[str], reference: Sequence[str]) -> list[list[bool]]: ...


def token_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the normalized token sets of two strings (0 when both are empty)."""
    left, right = set(normalize_answer(a).split()), set(normalize_answer(b).split())
    union = left | right
    return len(left & right) / len(union) if union else 0.0


class LexicalMatcher:
    """Match when the normalized token Jaccard of the two queries
    reaches `threshold` (judge-free; a documented stand-in)."""

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold
        self.name = f"lexical-jaccard@{threshold}"

    def __call__(self, question: str, policy: Sequence[str], reference: Sequence[str]) -> list[list[bool]]:
        return [[token_jaccard(p, r) >= self.threshold for r in reference] for p in policy]


class JudgeMatcher:
    """Match by a judge panel's majority vote on `evalsuite.judges.prompts.COVERAGE_MATCH` (cached)."""

    def __init__(self, panel_file: str | Path, cache_path: str | Path | None = None):
        from evalsuite.judges import load_panel
        from evalsuite.judges.evaluate import default_cache_path

        self.config = load_panel(panel_file)
        self.cache_path = Path(cache_path) if cache_path else default_cache_path()
        self.name = "judge:" + ",".join(j["name"] for j in self.config.identities())

    def __call__(self, question: str, policy: Sequence[str], reference: Sequence[str]) -> list[list[bool]]:
        from evalsuite.judges import majority_vote, run_panel
        from evalsuite.judges.panel import JudgeRequest
        from evalsuite.judges.prompts import COVERAGE_MATCH

        if not policy or not reference:
            return [[False] * len(reference) for _ in policy]
        requests = [
            JudgeRequest(
                "train",
                "train",
                "coverage",
                f"p{i}-t{j}",
                COVERAGE_MATCH,
                {"question": question, "policy_query": p, "teacher_query": r},
            )
            for i, p in enumerate(policy)
            for j, r in enumerate(reference)
        ]
        judgments, _ = run_panel(self.config, self.cache_path, requests)
        votes: dict[str, list[bool | None]] = {}
        for judgment in judgments:
            votes.setdefault(judgment.item, []).append(judgment.verdict)
        return [
            [majority_vote(votes.get(f"p{i}-t{j}", [])) is True for j in range(len(reference))]
            for i in range(len(policy))
        ]
