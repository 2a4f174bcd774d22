"""acc_judge: an LLM panel decides whether each prediction answers its question given the gold answers.

Every judge's verdict is kept in judgments.jsonl; the panel's verdict per example is the strict majority of the
verdicts that parsed (evalsuite.judges.panel.majority_vote). An example without one (a tie, or judges that answered
neither yes nor no) is *undecided*: it scores 0 in acc_judge, as a failed example scores 0 in EM, and is counted.
Agreement with EM and cover-EM is Cohen's κ on the decided examples with their 2×2 table, so a reader sees where
EM under-credits (judge yes, EM 0) and where the judge is lenient (judge no, EM 1 is rare and worth reading); the
agreement among the judges is each judge's rate of yes and Fleiss' κ over the answers every judge decided.

A verdict counts only for the answer it judged: its recorded input (question, golds, prediction) must be the request
the record makes now (`bound_verdict`), so a judgments.jsonl line about another prediction never scores this one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evalsuite.judges import prompts
from evalsuite.judges.panel import JudgeRequest, majority_vote
from evalsuite.metrics.query_quality import binary_counts, fleiss_kappa
from evalsuite.metrics.samples import pass_at_k, pass_ks
from evalsuite.runs.schema import ExampleRecord, MetricSummary
from evalsuite.stats import intervals

METRIC = "accuracy"
NO_ANSWER = "(no answer)"


def accuracy_item(record: ExampleRecord) -> str:
    """The judged item of a record: its answer, or its sample's answer in a sampled run."""
    return "answer" if record.sample is None else f"s{record.sample}"


def accuracy_input(record: ExampleRecord) -> dict[str, str]:
    """What a judge is shown about a record's answer: the question, its golds and the prediction."""
    return {
        "question": record.question,
        "golds": " | ".join(record.golden_answers),
        "prediction": record.prediction or NO_ANSWER,
    }


def accuracy_requests(records: Sequence[ExampleRecord]) -> list[JudgeRequest]:
    """One ANSWER_ACCURACY request per record."""
    return [
        JudgeRequest(r.id, r.task, METRIC, accuracy_item(r), prompts.ANSWER_ACCURACY, accuracy_input(r))
        for r in records
    ]


def bound_verdict(line: Mapping[str, Any], record: ExampleRecord) -> bool:
    """Whether a judgments.jsonl line judged this record's answer: the input it records is what the record shows a
    judge now (the same prediction, question and golds)."""
    return line.get("input") == accuracy_input(record)


def judge_agreement(rows: Sequence[Sequence[bool | None]], judges: Sequence[str]) -> dict[str, Any]:
    """Agreement among the judges on answers (one row per answer, one verdict per judge, None: unparsed): each
    judge's rate of yes over its parsed verdicts and Fleiss' κ (statsmodels) over the answers every judge decided;
    κ is None for one judge or when undefined (every verdict the same)."""
    per_judge = {}
    for j, name in enumerate(judges):
        parsed = [float(v) for row in rows if (v := row[j]) is not None]
        per_judge[name] = float(np.mean(parsed)) if parsed else None
    counts = binary_counts(rows)
    return {
        "per_judge_rate": per_judge,
        "fleiss_kappa": fleiss_kappa(counts) if len(judges) > 1 else None,
        "n_kappa_items": int(len(counts)),
    }


def cohens_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two 0/1 ratings (statsmodels' cohens_kappa on their 2×2 table); NaN when undefined."""
    from evalsuite.errors import require

    kappa = require("statsmodels.stats.inter_rater", "judge", "judge agreement (Cohen's kappa)").cohens_kappa

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


def accuracy_scores(
    records: Sequence[ExampleRecord], table: dict[tuple[str, str, str, str], list[bool | None]], judges: Sequence[str]
) -> tuple[dict[str, Any], dict[str, MetricSummary]]:
    """One task's acc_judge (undecided examples score 0) with its interval, its agreement with EM and cover-EM
    (κ and the 2×2 table, judge rows, metric columns, over the decided answers) and among the judges
    (`judge_agreement`). `table`: (task, id, metric, item) → the verdicts in `judges` order.

    A sampled run's answers are K per question: the summary is acc_judge_avg, each question's mean over its judged
    samples, with the interval over questions (as every metric over samples); κ compares answer with answer."""
    rows = [table.get((r.task, r.id, METRIC, accuracy_item(r)), [None] * len(judges)) for r in records]
    votes = [majority_vote(row) for row in rows]
    scores = np.array([v is True for v in votes], dtype=float)
    decided = np.array([v is not None for v in votes])
    agreement: dict[str, Any] = {}
    for name in ("em", "cover_em"):
        metric = np.array([r.metrics.get(name, 0.0) for r in records], dtype=float)
        judged, other = scores[decided], metric[decided] == 1.0
        cells = confusion(judged, other)
        agreement[name] = {
            "kappa": cohens_kappa(judged, other),
            "table": {
                "judge_yes_metric_1": int(cells[0, 0]),
                "judge_yes_metric_0": int(cells[0, 1]),
                "judge_no_metric_1": int(cells[1, 0]),
                "judge_no_metric_0": int(cells[1, 1]),
            },
        }
    sampled = any(r.sample is not None for r in records)
    if sampled:
        by_question: dict[str, list[float]] = {}
        for record, score in zip(records, scores):
            by_question.setdefault(record.id, []).append(float(score))
        name, values = "acc_judge_avg", np.array([np.mean(v) for v in by_question.values()])
    else:
        name, values = "acc_judge", scores
    task = records[0].task if records else ""
    (interval,) = intervals.mean_intervals(name, values, task)
    result = {
        "acc_judge": float(values.mean()) if values.size else float("nan"),
        "n": int(scores.size),
        "n_undecided": int((~decided).sum()),
        "undecided_rule": "no strict majority of parsed verdicts: scores 0",
        "agreement": agreement,
        "judges": judge_agreement(rows, judges),
    }
    if sampled:
        result |= {"n_questions": int(values.size), "unit": "question: the mean of its judged samples (acc_judge_avg)"}
    return result, {name: MetricSummary(mean=interval.mean, ci_low=interval.low, ci_high=interval.high)}


def accuracy_columns(
    verdicts: Mapping[tuple[str, str, str], bool | None], task: str, ids: Sequence[str], samples: int
) -> dict[str, np.ndarray]:
    """acc_judge of one task as per-example score columns in `ids` order: 1 when the panel said yes, 0 when no or
    undecided, NaN for an answer never judged. A sampled run's columns are per question (K = `samples`):
    acc_judge_avg over its judged samples and acc_judge_pass@k (Chen et al., 2021) where k samples were judged.
    Empty when no answer of the task was judged. `verdicts`: (task, id, item) → the panel's verdict."""

    def value(example: str, item: str) -> float:
        key = (task, example, item)
        return float("nan") if key not in verdicts else float(verdicts[key] is True)

    if samples == 1:
        column = np.array([value(i, "answer") for i in ids], dtype=float)
        return {} if np.isnan(column).all() else {"acc_judge": column}
    # each question's judged samples as a multiset: counts, never which label a verdict is under
    judged: dict[str, list[float]] = {}
    for (held, example, item), verdict in verdicts.items():
        if held == task and item.startswith("s"):
            judged.setdefault(example, []).append(float(verdict is True))
    present = np.array([len(judged.get(i, ())) for i in ids])
    if not present.any():
        return {}
    correct = np.array([sum(judged.get(i, ())) for i in ids], dtype=float)
    columns = {"acc_judge_avg": np.where(present > 0, correct / np.maximum(present, 1), np.nan)}
    for k in pass_ks(samples):
        values = np.full(len(ids), np.nan)
        enough = present >= k
        values[enough] = pass_at_k(present[enough], correct[enough], k)
        columns[f"acc_judge_pass@{k}"] = values
    return columns
