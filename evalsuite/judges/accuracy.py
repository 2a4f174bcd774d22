"""acc_judge: an LLM panel decides whether each prediction answers its question given the gold answers.

Every judge's verdict is kept in judgments.jsonl; the panel's verdict per example is the strict majority of the
verdicts that parsed (evalsuite.judges.panel.majority_vote). An example without one (a tie, or judges that answered
neither yes nor no) is *undecided*: it scores 0 in acc_judge, as a failed example scores 0 in EM, and is counted.
Agreement with EM and cover-EM is Cohen's κ on the decided examples with their 2×2 table, so a reader sees where
EM under-credits (judge yes, EM 0) and where the judge is lenient (judge no, EM 1 is rare and worth reading).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalsuite.judges import prompts
from evalsuite.judges.panel import JudgeRequest, majority_vote
from evalsuite.runs.schema import ExampleRecord, MetricSummary
from evalsuite.stats.intervals import wilson

METRIC = "accuracy"
NO_ANSWER = "(no answer)"


def accuracy_item(record: ExampleRecord) -> str:
    """The judged item of a record: its answer, or its sample's answer in a sampled run."""
    return "answer" if record.sample is None else f"s{record.sample}"


def accuracy_requests(records: Sequence[ExampleRecord]) -> list[JudgeRequest]:
    """One ANSWER_ACCURACY request per record."""
    return [JudgeRequest(r.id, r.task, METRIC, accuracy_item(r), prompts.ANSWER_ACCURACY,
                         {"question": r.question, "golds": " | ".join(r.golden_answers), "prediction": r.prediction or NO_ANSWER})
            for r in records]


def cohens_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two 0/1 ratings (statsmodels' cohens_kappa on their 2×2 table); NaN when undefined."""
    from statsmodels.stats.inter_rater import cohens_kappa as kappa

    table = confusion(a, b)
    if table.sum() == 0:
        return float("nan")
    expected = (table.sum(axis=1) @ table.sum(axis=0)) / table.sum() ** 2
    if expected == 1.0:  # both raters constant and equal: agreement is total but κ is 0/0
        return float("nan")
    return float(kappa(table, return_results=False))


def confusion(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The 2×2 table [[a=1 & b=1, a=1 & b=0], [a=0 & b=1, a=0 & b=0]]."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    return np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])


def accuracy_scores(records: Sequence[ExampleRecord], table: dict[tuple[str, str, str, str], list[bool | None]],
                    n_judges: int) -> tuple[dict[str, Any], MetricSummary]:
    """One task's acc_judge (undecided examples score 0) with its Wilson interval, and its agreement with EM and
    cover-EM: κ and the 2×2 table (judge rows, metric columns) over the decided examples."""
    votes = [majority_vote(table.get((r.task, r.id, METRIC, accuracy_item(r)), [None] * n_judges)) for r in records]
    scores = np.array([v is True for v in votes], dtype=float)
    decided = np.array([v is not None for v in votes])
    low, high = wilson(np.array([scores.sum()]), max(len(scores), 1))
    agreement: dict[str, Any] = {}
    for name in ("em", "cover_em"):
        metric = np.array([r.metrics.get(name, 0.0) for r in records], dtype=float)
        judged, other = scores[decided], metric[decided] == 1.0
        cells = confusion(judged, other)
        agreement[name] = {
            "kappa": cohens_kappa(judged, other),
            "table": {"judge_yes_metric_1": int(cells[0, 0]), "judge_yes_metric_0": int(cells[0, 1]),
                      "judge_no_metric_1": int(cells[1, 0]), "judge_no_metric_0": int(cells[1, 1])},
        }
    result = {"acc_judge": float(scores.mean()) if scores.size else float("nan"), "n": int(scores.size),
              "n_undecided": int((~decided).sum()), "undecided_rule": "no strict majority of parsed verdicts: scores 0",
              "agreement": agreement}
    return result, MetricSummary(mean=result["acc_judge"], ci_low=float(low[0]), ci_high=float(high[0]))
