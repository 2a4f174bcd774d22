"""From records to panel requests, and from a fixed table of verdicts to the run's judged metrics (no server)."""

from __future__ import annotations

import pytest

from evalsuite.judges.evaluate import aggregate, build_requests
from evalsuite.judges.panel import Judgment
from evalsuite.runs.schema import ExampleRecord, Passage, Turn
from tests.conftest import requires_extra

# evalsuite's Fleiss' kappa, which the panel summaries report, runs on statsmodels (the [stats] extra)
FLEISS = requires_extra("stats", "statsmodels")

JUDGES = ["a", "b", "c"]


def _record(rid: str, em: float, rounds: list[tuple[str, list[str]]]) -> ExampleRecord:
    turns = [Turn(text="", query=q, passages=[Passage(title=f"T{d}", text=f"text {d}", doc_id=d) for d in docs]) for q, docs in rounds]
    return ExampleRecord(id=rid, task="t", question=f"question {rid}?", golden_answers=["gold"], prediction="p", turns=turns, metrics={"em": em})


RECORDS = [
    _record("1", 1.0, [("q1a", ["x", "y"]), ("q1b", ["z", "w"])]),
    _record("2", 0.0, [("q2a", ["x", "y"]), ("q2b", ["x", "y"])]),  # second round repeats both documents: not novel
    _record("3", 0.0, []),
]


def _judgments(metric: str, verdicts: dict[tuple[str, str], list[bool | None]]) -> list[Judgment]:
    out = []
    for (rid, item), row in verdicts.items():
        for judge, v in zip(JUDGES, row):
            out.append(Judgment(example_id=rid, task="t", metric=metric, item=item, judge=judge, model=judge, template=metric, template_hash="h", verdict=v))
    return out


def test_requests_per_metric() -> None:
    requests = build_requests(RECORDS, ["completeness", "granularity", "usefulness", "coverage"], teacher={"1": ["t0"], "2": ["t0", "t1"], "3": ["t0"]})
    items = [(r.example_id, r.metric, r.item) for r in requests]
    assert items == [
        ("1", "completeness", "question"), ("1", "granularity", "q0"), ("1", "granularity", "q1"),
        ("1", "coverage", "p0-t0"), ("1", "coverage", "p1-t0"), ("1", "usefulness", "r0"), ("1", "usefulness", "r1"),
        ("2", "completeness", "question"), ("2", "granularity", "q0"), ("2", "granularity", "q1"),
        ("2", "coverage", "p0-t0"), ("2", "coverage", "p0-t1"), ("2", "coverage", "p1-t0"), ("2", "coverage", "p1-t1"),
        ("2", "usefulness", "r0"), ("2", "usefulness", "r1"),
    ]  # example 3 never searched: nothing to judge
    second_round = requests[6].values
    assert second_round["history"] == "1. q1a -> Tx; Ty" and second_round["query"] == "q1b" and second_round["answer"] == "gold"
    assert second_round["documents"] == "Doc 1 (Title: Tz) text z\nDoc 2 (Title: Tw) text w"
    assert requests[0].values["queries"] == "1. q1a\n2. q1b"


@FLEISS
def test_usefulness_and_novelty_give_perfect_and_partial_rates() -> None:
    T, F = True, False
    judgments = _judgments("usefulness", {("1", "r0"): [T, T, F], ("1", "r1"): [T, F, T], ("2", "r0"): [F, F, T], ("2", "r1"): [T, T, T]})
    result = aggregate(RECORDS, judgments, JUDGES, ["usefulness"], None)["t"]["usefulness"]
    # example 1 (correct): both rounds novel and useful -> perfect. Example 2 (wrong): r0 not useful, r1 useful
    # but redundant -> no high-quality query -> not partial.
    assert (result["perfect_rate"], result["partial_rate"]) == (1.0, 0.0)
    assert result["usefulness"]["score"] == pytest.approx(8 / 12)
    assert result["usefulness"]["per_judge"] == pytest.approx({"a": 0.75, "b": 0.5, "c": 0.75})


@FLEISS
def test_coverage_uses_the_panel_majority_per_pair() -> None:
    T, F, N = True, False, None
    teacher = {"1": ["t0"], "2": ["t0", "t1"], "3": ["t0"]}
    judgments = _judgments("coverage", {
        ("1", "p0-t0"): [T, T, F], ("1", "p1-t0"): [T, N, N],
        ("2", "p0-t0"): [F, F, T], ("2", "p0-t1"): [T, T, T], ("2", "p1-t0"): [N, N, N], ("2", "p1-t1"): [T, F, N],
    })
    result = aggregate(RECORDS, judgments, JUDGES, ["coverage"], teacher)["t"]["coverage"]
    # ex 1: P = 1/2, R = 1, F1 = 2/3.  ex 2: one match (p0-t1) -> P = R = F1 = 1/2.  ex 3: no queries -> 0.
    assert result["precision"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert result["recall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert result["f1"] == pytest.approx((2 / 3 + 0.5 + 0) / 3)
    # judge a alone: ex 1 matches t0 (P 1/2, R 1, F1 2/3); ex 2 p0-t1 and p1-t1 both to t1 -> 1 match, F1 1/2
    assert result["per_judge_f1"]["a"] == pytest.approx((2 / 3 + 0.5 + 0) / 3)


@FLEISS
def test_completeness_skips_examples_without_queries() -> None:
    judgments = _judgments("completeness", {("1", "question"): [True, True, False], ("2", "question"): [False, False, False]})
    result = aggregate(RECORDS, judgments, JUDGES, ["completeness"], None)["t"]["completeness"]
    assert result["score"] == pytest.approx((2 / 3 + 0) / 2) and result["n_without_queries"] == 1
