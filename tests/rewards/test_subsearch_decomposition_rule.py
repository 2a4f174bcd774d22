"""SubSearch's decomposition rule on hand-computed cases: a split the question does not need is never paid
("Do not decompose questions that do not need it", seeds/001 line 6), and a wrong answer never scores as much as a
correct one, at any β the configuration allows."""

from __future__ import annotations

import itertools

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.rewards import get_reward
from evalsuite.runs.schema import Passage, Turn

GOLD = "Paris"


def searched(query: str | list[str], docs: list[str], answer: str) -> list[Turn]:
    """One search round (a query, or sub-queries whose documents follow each other, top-k each), then the answer."""
    subs = query if isinstance(query, list) else []
    round_ = Turn(text="<think>t</think><search>q</search>", think=["t"], query=None if subs else query, sub_queries=subs,
                  passages=[Passage(title=f"T{i}", text=text) for i, text in enumerate(docs)])
    return [round_, Turn(text=f"<think>t</think><answer>{answer}</answer>", think=["t"], answer=answer)]


def score(config: dict, trajectory: list[Turn], needs: bool, gold: str = GOLD) -> dict[str, float]:
    return get_reward("subsearch", config).breakdown(["x"], golden_answers=[[gold]], turns=[trajectory], needs_decomposition=[needs])[0]


def test_the_issue_case_a_wrong_single_hop_answer_split_into_two_paraphrases():
    # Two paraphrases of "capital of France" with different documents: before, decomposition 1 and total 0.5 (β 1)
    split = searched(["capital of France", "France's capital city"], ["Lyon is big", "Nice is sunny"], answer="Lyon")
    unsplit = searched("capital of France", ["Lyon is big"], answer="Lyon")
    row = score({"aggregation": "residual", "beta": 0.5}, split, needs=False)
    # a = 0 (no gold; a needless split earns none anyway), d = −1 -> p = (0.5·0 + 0.5·(−1)) / 1 = −0.5, r = 0.5·(−0.5)
    assert (row["answerability"], row["decomposition"], row["process"]) == (0.0, -1.0, -0.5)
    assert row["total"] == pytest.approx(-0.25)
    assert score({"aggregation": "residual", "beta": 0.5}, unsplit, needs=False)["total"] == 0.0


def test_the_issue_case_b_a_wrong_answer_with_a_good_split_early_in_training_stays_below_a_correct_one():
    # Before: β_1 = 1 − EMA_0 = 1, a = 1, d = 1 -> 1.0, a correct answer's score. A multi-hop question that needs the split:
    wrong = searched(["capital of France", "river of Paris"], ["Paris is the capital", "x", "the Seine", "y"], answer="Lyon")
    reward = get_reward("subsearch", {"aggregation": "adaptive_residual"})  # β_max 0.5, α 0.1
    row = reward.breakdown(["x"], golden_answers=[[GOLD]], turns=[wrong], needs_decomposition=[True])[0]
    # first batch: accuracy 0 -> A_1 = 0 -> β_1 = 0.5 · (1 − 0) = 0.5; p = 0.5·1 + 0.5·1 = 1 -> r = 0.5
    assert (row["answerability"], row["decomposition"], row["process"], row["beta"]) == (1.0, 1.0, 1.0, 0.5)
    assert row["total"] == pytest.approx(0.5)


DOCS = {"gold": ["Paris is the capital", "Lyon"], "no gold": ["Lyon", "Nice"]}


@pytest.mark.parametrize("aggregation", ["weighted_sum", "residual", "adaptive_residual"])
def test_single_hop_unsplit_is_never_below_split_whatever_the_documents(aggregation):
    config = {"aggregation": aggregation, "beta": 0.9, "beta_max": 0.9}
    cases = 0
    for unsplit_docs, split_docs, repeated, answer in itertools.product(DOCS, DOCS, (False, True), ("Lyon", GOLD)):
        first, second = DOCS[split_docs]
        split = searched(["q one", "q two"], [first, second] + ([first, second] if repeated else ["z1", "z2"]), answer)
        unsplit = searched("q", DOCS[unsplit_docs], answer)
        s, u = score(config, split, needs=False), score(config, unsplit, needs=False)
        assert u["total"] >= s["total"], (unsplit_docs, split_docs, repeated, answer, u, s)
        assert s["decomposition"] == -1.0 and s["answerability"] == 0.0
        cases += 1
    assert cases == 16
    # the worst unsplit (no gold, wrong) against the best split (gold in its documents, distinct halves): 0 vs negative
    best_split = searched(["q one", "q two"], ["Paris is the capital", "Lyon", "z1", "z2"], "Lyon")
    assert score(config, best_split, needs=False)["total"] < score(config, searched("q", ["Lyon"], "Lyon"), needs=False)["total"]


def test_a_split_the_question_needs_is_still_paid_and_more_than_three_parts_is_not():
    distinct = searched(["capital of France", "river of Paris"], ["Paris is the capital", "x", "the Seine", "y"], answer="Lyon")
    four = searched(["a", "b", "c", "d"], ["Paris is the capital"] * 4, answer="Lyon")
    assert score({"aggregation": "residual", "beta": 0.5}, distinct, needs=True)["decomposition"] == 1.0
    assert score({"aggregation": "residual", "beta": 0.5}, four, needs=True)["decomposition"] == -1.0
    # a row without the column is treated as needing no split: nothing pays a split unless the row says so
    row = get_reward("subsearch", {"aggregation": "residual"}).breakdown(["x"], golden_answers=[[GOLD]], turns=[distinct])[0]
    assert row["decomposition"] == -1.0


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.5, 0.99])
def test_a_wrong_answer_never_scores_as_much_as_a_correct_one_at_any_beta(beta):
    best_wrong = searched(["capital of France", "river of Paris"], ["Paris is the capital", "x", "Paris on the Seine", "y"], answer="Lyon")
    worst_correct = searched(["a", "b", "c", "d"], ["nothing"] * 4, answer=GOLD)  # a = 0, d = −1
    for config in ({"aggregation": "residual", "beta": beta}, {"aggregation": "adaptive_residual", "beta_max": beta}):
        wrong = score(config, best_wrong, needs=True)
        correct = score(config, worst_correct, needs=True)
        assert wrong["process"] == 1.0 and correct["process"] == -0.5  # a = 0, d = −1: p = (0.5·0 + 0.5·(−1)) / 1
        assert wrong["total"] == pytest.approx(beta) and correct["total"] == 1.0  # r = 0 + 1 · β · 1 vs 1 + 0
        assert wrong["total"] < correct["total"]


@pytest.mark.parametrize("field", ["beta", "beta_max"])
def test_a_beta_of_one_is_refused(field):
    with pytest.raises(EvalsuiteError, match=f"{field} must be in"):
        get_reward("subsearch", {field: 1.0})


def test_beta_starts_from_the_first_batch_accuracy_not_from_an_assumed_zero():
    reward = get_reward("subsearch", {"aggregation": "adaptive_residual", "ema_alpha": 0.1, "beta_max": 0.5})
    assert reward.current_beta() == 0.5 and reward.accuracy_average() is None
    right, wrong = searched("q", ["Paris"], GOLD), searched("q", ["Paris"], "Lyon")
    reward(list("abcd"), golden_answers=[[GOLD]] * 4, turns=[right, wrong, wrong, wrong])
    # m_1 = 0.1 · 0.25 = 0.025, A_1 = 0.025 / (1 − 0.9) = 0.25 -> β_1 = 0.5 · 0.75
    assert reward.accuracy_average() == pytest.approx(0.25) and reward.current_beta() == pytest.approx(0.375)
    reward(list("ef"), golden_answers=[[GOLD]] * 2, turns=[right, wrong])
    # m_2 = 0.1 · 0.5 + 0.9 · 0.025 = 0.0725, A_2 = 0.0725 / (1 − 0.81) = 0.381579 -> β_2 = 0.5 · 0.618421
    assert reward.accuracy_average() == pytest.approx(0.0725 / 0.19)
    assert reward.current_beta() == pytest.approx(0.5 * (1 - 0.0725 / 0.19))


def test_the_accuracy_is_summed_over_processes_before_the_ema():
    # what each process's reduce returns: its own [correct, count] plus the other process's [0, 2]
    seen = []

    def reduce_sum(values):
        seen.append(list(values))
        return [values[0] + 0.0, values[1] + 2.0]

    reward = get_reward("subsearch", {"aggregation": "adaptive_residual", "beta_max": 0.5}, reduce_sum=reduce_sum)
    right = searched("q", ["Paris"], GOLD)
    reward(list("ab"), golden_answers=[[GOLD]] * 2, turns=[right, right])
    assert seen == [[2.0, 2.0]]
    # 2 correct of 4 over both processes: A_1 = 0.5 -> β_1 = 0.25 (alone this process would hold β_1 = 0)
    assert reward.current_beta() == pytest.approx(0.25)


def test_an_unexecuted_final_search_counts_as_a_round_without_documents():
    # rule.unexecuted_search: the final turn asked for a search no turn was left to run (no passages)
    executed = Turn(text="<think>t</think><search>q</search>", think=["t"], query="q", passages=[Passage(title="P", text="Paris")])
    unexecuted = Turn(text="<think>t</think><search>q2</search>", think=["t"], query="q2")
    row = score({"aggregation": "residual", "beta": 0.5}, [executed, unexecuted], needs=False)
    # a = 1 hit of 2 rounds = 0.5, d = 0 -> p = 0.25, no answer -> r = 0.5 · 0.25
    assert row["answerability"] == 0.5 and row["total"] == pytest.approx(0.125)
