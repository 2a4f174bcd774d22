"""Rule-based search-process metrics: SmartSearch novelty,
query-quality rates and Search Efficiency; Search-P1 turn statistics.

Novelty (SmartSearch, Dual-Level Credit Assessment): at search round t, O_t counts the round's retrieved documents
already retrieved in an earlier round; the round is novel iff O_t <= K. The paper leaves K to the implementation; we
use K = 1 (at most one repeated document) by default and record K with every result.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalsuite.metrics.answer import normalize_answer
from evalsuite.runs.schema import ExampleRecord, Passage, Turn

NOVELTY_MAX_OVERLAP = 1
SUCCESS_METRIC = "em"


@dataclass(frozen=True)
class SearchRound:
    """One retrieval round: the query text as issued (sub-queries joined with ' ## ') and its documents' keys."""

    query: str
    docs: tuple[str, ...]


def doc_key(passage: Passage) -> str:
    """A document's identity: its id when the retriever gave one, else a hash of its normalized title and text."""
    if passage.doc_id:
        return f"id:{passage.doc_id}"
    text = normalize_answer(f"{passage.title or ''} {passage.text}")
    return "h:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def search_rounds(turns: Sequence[Turn]) -> list[SearchRound]:
    """The turns that searched, in order."""
    rounds = []
    for turn in turns:
        if turn.sub_queries:
            query = " ## ".join(turn.sub_queries)
        elif turn.query is not None:
            query = turn.query
        else:
            continue
        rounds.append(SearchRound(query, tuple(doc_key(p) for p in turn.passages)))
    return rounds


def extract_queries(turns: Sequence[Turn]) -> list[str]:
    """Every search query of a trajectory (each sub-query counts as one), as judged for granularity and coverage."""
    queries: list[str] = []
    for turn in turns:
        if turn.sub_queries:
            queries.extend(turn.sub_queries)
        elif turn.query is not None:
            queries.append(turn.query)
    return queries


def overlap_counts(rounds: Sequence[SearchRound]) -> list[int]:
    """O_t per round: how many of its documents an earlier round
    already retrieved (duplicates within a round count once each)."""
    seen: set[str] = set()
    counts = []
    for round_ in rounds:
        counts.append(sum(doc in seen for doc in round_.docs))
        seen.update(round_.docs)
    return counts


def novelty_flags(rounds: Sequence[SearchRound], max_overlap: int = NOVELTY_MAX_OVERLAP) -> list[bool]:
    """SmartSearch novelty per round: O_t <= K."""
    return [count <= max_overlap for count in overlap_counts(rounds)]


def example_process_metrics(record: ExampleRecord, max_overlap: int = NOVELTY_MAX_OVERLAP) -> dict[str, float]:
    """Per-example counts stored with the record: novel and redundant search rounds."""
    flags = novelty_flags(search_rounds(record.turns), max_overlap)
    return {"n_novel": float(sum(flags)), "n_redundant": float(len(flags) - sum(flags))}


def search_quality_rates(examples: Sequence[tuple[bool, Sequence[bool]]]) -> dict[str, float | int | None]:
    """SmartSearch Search Quality from (answer correct, per-query high-quality flags) pairs.

    Perfect Rate: among correctly answered examples that searched, the share whose queries are all high-quality.
    Partial Rate: among wrongly answered examples that searched, the share with at least one high-quality query.
    """
    correct = [flags for ok, flags in examples if ok and flags]
    wrong = [flags for ok, flags in examples if not ok and flags]
    return {
        "perfect_rate": float(np.mean([all(f) for f in correct])) if correct else None,
        "partial_rate": float(np.mean([any(f) for f in wrong])) if wrong else None,
        "n_correct_with_search": len(correct),
        "n_wrong_with_search": len(wrong),
    }


def search_efficiency(correct: Sequence[float], searches: Sequence[float]) -> float | None:
    """SmartSearch Search Efficiency: correct answers per search call over a set of examples."""
    total = float(np.sum(searches))
    return float(np.sum(correct)) / total if total else None


def _group_stats(records: Sequence[ExampleRecord]) -> dict[str, Any]:
    turns = [r.metrics.get("n_turns", float(len(r.turns))) for r in records]
    searches = [r.metrics.get("n_searches", 0.0) for r in records]
    hist = {"0": 0, "1": 0, "2": 0, "3+": 0}
    for s in searches:
        hist["3+" if s >= 3 else str(int(s))] += 1
    n = len(records)
    return {
        "n": n,
        "mean_turns": float(np.mean(turns)) if n else None,
        "mean_searches": float(np.mean(searches)) if n else None,
        "searches_share": {k: v / n for k, v in hist.items()} if n else {},
    }


def turn_statistics(records: Sequence[ExampleRecord], success_metric: str = SUCCESS_METRIC) -> dict[str, Any]:
    """Search-P1: turns and searches of successful vs failed trajectories, and the gap (failed minus successful).

    `relative_gap_*` is the gap over the successful mean, as Search-P1 quotes it ("+60%").
    """
    ok = [r for r in records if r.status == "ok"]
    success = [r for r in ok if r.metrics.get(success_metric, 0.0) >= 1.0]
    failure = [r for r in ok if r.metrics.get(success_metric, 0.0) < 1.0]
    out: dict[str, Any] = {
        "success_metric": success_metric,
        "success": _group_stats(success),
        "failure": _group_stats(failure),
    }
    for name in ("turns", "searches"):
        s, f = out["success"][f"mean_{name}"], out["failure"][f"mean_{name}"]
        out[f"gap_{name}"] = f - s if s is not None and f is not None else None
        out[f"relative_gap_{name}"] = (f - s) / s if s and f is not None else None
    return out


def process_summary(records: Sequence[ExampleRecord], max_overlap: int = NOVELTY_MAX_OVERLAP) -> dict[str, Any]:
    """Run-level rule-based process metrics per task: novelty rate, Search Efficiency and Search-P1 turn statistics."""
    by_task: dict[str, list[ExampleRecord]] = defaultdict(list)
    for record in records:
        by_task[record.task].append(record)
    tasks: dict[str, Any] = {}
    for task, rows in by_task.items():
        ok = [r for r in rows if r.status == "ok"]
        flags = [flag for r in ok for flag in novelty_flags(search_rounds(r.turns), max_overlap)]
        tasks[task] = {
            "novelty_rate": float(np.mean(flags)) if flags else None,
            "n_rounds": len(flags),
            "search_efficiency": search_efficiency(
                [r.metrics.get(SUCCESS_METRIC, 0.0) for r in ok], [r.metrics.get("n_searches", 0.0) for r in ok]
            ),
            "turns": turn_statistics(ok),
        }
    return {"novelty_max_overlap": max_overlap, "search_efficiency_metric": SUCCESS_METRIC, "tasks": tasks}


def add_process_metrics(records: Sequence[ExampleRecord], max_overlap: int = NOVELTY_MAX_OVERLAP) -> None:
    """Add per-example novelty counts to each scored (ok) record: every writer of a run directory does, `run` as each
    trajectory finishes and `score` as it rescores, so their records carry the same columns. The run-level summary
    (`process_summary`) goes into metrics.json's `extra` when the directory is finished (`RunDirectory.finish`)."""
    for record in records:
        if record.status == "ok":
            record.metrics.update(example_process_metrics(record, max_overlap))
