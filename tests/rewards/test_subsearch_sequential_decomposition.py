"""SubSearch's decomposition term counts sequential `<search>` rounds as sub-queries, as the seed's case studies do
(seeds/001 Tables 5-7: every successful trajectory decomposes with separate searches; `##` appears only in the
prompt). Hand-computed values on the case studies' own queries."""

from __future__ import annotations

import pytest

from evalsuite.methods.subsearch.reward import chain_score, decomposition
from evalsuite.rewards import get_reward
from evalsuite.runs.schema import Passage, Turn


def search(query: str, *titles: str) -> Turn:
    return Turn(text=f"<think>t</think><search>{query}</search>", think=["t"], query=query,
                passages=[Passage(title=title, text=f"{title} text") for title in titles])


def answer(text: str) -> Turn:
    return Turn(text=f"<think>t</think><answer>{text}</answer>", think=["t"], answer=text)


# Table 6 (001:61): "who is joe buck father broadcast", then "who did jack buck broadcast for"
JOE_BUCK = [search("who is joe buck father broadcast", "Joe Buck", "Joe Buck 2"),
            search("who did jack buck broadcast for", "Jack Buck", "St. Louis Cardinals"), answer("St. Louis Cardinals")]


def test_the_papers_sequential_case_study_scores_full_decomposition():
    # two rounds, neither's documents repeated by the other: 2 / 2
    assert chain_score(JOE_BUCK, needs_decomposition=True) == 1.0
    assert decomposition(JOE_BUCK, needs_decomposition=True) == 1.0
    row = get_reward("subsearch", {"aggregation": "residual", "beta": 0.5}).breakdown(
        ["x"], golden_answers=[["Ars Nova"]], turns=[JOE_BUCK], needs_decomposition=[True])[0]
    # wrong answer, no gold in the documents: a = 0, d = 1 -> p = 0.5, r = 0 + 1 · 0.5 · 0.5
    assert (row["answerability"], row["decomposition"], row["process"]) == (0.0, 1.0, 0.5)
    assert row["total"] == pytest.approx(0.25)


def test_a_repeated_query_earns_nothing_for_its_round():
    # Table 8's failure (001:79): similar queries fetching the same documents. Rounds 1 and 3 repeat each other's
    # documents, round 2 is new: 1 of 3
    stuck = [search("Big Fish composer theater", "Big Fish", "Lippa"), search("Andrew Lippa residency", "Ars Nova"),
             search("Big Fish composer theater again", "Big Fish", "Lippa"), answer("Broadway")]
    assert chain_score(stuck, True) == pytest.approx(1 / 3)
    # a search that never ran (no documents) is no sub-query answered: 1 of 2
    unexecuted = [search("who is joe buck father", "Joe Buck"), search("who did jack buck broadcast for")]
    assert chain_score(unexecuted, True) == 0.5


def test_one_round_is_no_decomposition_and_a_single_hop_question_is_not_scored_on_its_chain():
    assert chain_score(JOE_BUCK[1:], True) is None and decomposition(JOE_BUCK[1:], needs_decomposition=True) == 0.0
    # "You can search as many times as you want" (001:6): searching again on a single-part question is neither paid
    # nor penalised
    assert chain_score(JOE_BUCK, needs_decomposition=False) is None
    assert decomposition(JOE_BUCK, needs_decomposition=False) == 0.0


def test_a_split_round_and_the_chain_are_averaged():
    split = Turn(text="x", query=None, sub_queries=["China CITIC Bank branches", "UniCredit branches"],
                 passages=[Passage(title=t, text=f"{t} text") for t in ("CITIC", "c2", "UniCredit", "u2")])
    trajectory = [split, search("UniCredit branches 2018", "UniCredit", "u2"), answer("UniCredit")]
    # split round: both halves distinct -> 1; chain: round 2's documents {UniCredit, u2} lie inside round 1's -> 1 of 2
    assert chain_score(trajectory, True) == 0.5
    assert decomposition(trajectory, needs_decomposition=True) == pytest.approx((1.0 + 0.5) / 2)
    # the same split on a question that needs none: −1 for the split, the chain unscored
    assert decomposition(trajectory, needs_decomposition=False) == -1.0
