"""Hand-computed values for every reward formula, in TRL's calling convention (completions + columns)."""

from __future__ import annotations

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.rewards import get_reward, list_rewards
from evalsuite.rewards.matching import LexicalMatcher, token_jaccard
from evalsuite.methods.search_r1.reward import SearchR1RewardConfig
from evalsuite.runs.schema import Passage, Turn

VALID_CORRECT = (
    "<think>find the capital</think>\n<search>capital of France</search>\n\n"
    "<information>Doc 1(Title: \"France\") Paris is the capital of France.\nDoc 2(Title: \"Lyon\") Lyon is a city.</information>\n\n"
    "<think>it is Paris</think>\n<answer>Paris</answer>"
)


def turns(*rounds, answer="Paris"):
    """Turns: each round is (query or list of sub-queries, [(title, text), ...]); a final answer turn."""
    out = []
    for query, docs in rounds:
        subs = query if isinstance(query, list) else []
        out.append(Turn(text="<think>t</think><search>x</search>", think=["t"], query=None if subs else query, sub_queries=subs,
                        passages=[Passage(title=t, text=x) for t, x in docs]))
    out.append(Turn(text=f"<think>t</think><answer>{answer}</answer>", think=["t"], answer=answer))
    return out


def test_registry_names_the_six_methods():
    assert list_rewards() == ["oases", "progress", "search-p1", "search-r1", "smartsearch", "subsearch"]
    with pytest.raises(EvalsuiteError, match="did you mean search-r1"):
        get_reward("search-r2")
    with pytest.raises(EvalsuiteError, match="bad settings"):
        get_reward("progress", {"lambda_cov": 0.3})


# --- Search-R1 -------------------------------------------------------------------------------------------------


def test_search_r1_em_only_by_default():
    reward = get_reward("search-r1")
    wrong = VALID_CORRECT.replace("<answer>Paris</answer>", "<answer>Lyon</answer>")
    assert reward([VALID_CORRECT, wrong, "no tags at all"], golden_answers=[["Paris"], ["Paris"], ["Paris"]]) == [1.0, 0.0, 0.0]


def test_search_r1_reads_the_answer_of_the_response_not_the_prompt_or_passages():
    reward = get_reward("search-r1")
    # the gold appears in a retrieved passage and in a prompt-like example, but the model's own answer is wrong
    text = VALID_CORRECT.replace("<answer>Paris</answer>", "<answer>Lyon</answer>").replace("Paris is", "<answer>Paris</answer> is")
    assert reward([text], golden_answers=[["Paris"]]) == [0.0]


def test_search_r1_pays_nothing_for_the_answer_tags_of_the_invalid_action_message():
    from evalsuite.protocol.search_r1 import INVALID_ACTION

    # The message says "...between <answer> and </answer>...": read over the whole text, this rollout would answer
    # "and" and earn the shaped reward's final_format_score. Parsed from the text or given as turns, it has no answer.
    reward = get_reward("search-r1", SearchR1RewardConfig.shaped().__dict__)
    text = "I am not sure." + INVALID_ACTION + "Still not sure."
    given = [Turn(text="I am not sure.", invalid_action=True), Turn(text="Still not sure.")]
    assert reward([text, text], golden_answers=[["and"], ["and"]], turns=[None, given]) == [0.0, 0.0]


def test_search_r1_shaped_reward_cases():
    reward = get_reward("search-r1", SearchR1RewardConfig.shaped().__dict__)
    wrong_valid = VALID_CORRECT.replace("<answer>Paris</answer>", "<answer>Lyon</answer>")
    wrong_valid_no_gold = wrong_valid.replace("Paris is the capital", "It is the capital")
    invalid_correct = "<answer>Paris</answer>"  # no <think>: not a valid sequence
    invalid_wrong = "<answer>Rome</answer>"
    got = reward([VALID_CORRECT, wrong_valid, wrong_valid_no_gold, invalid_correct, invalid_wrong, "nothing"],
                 golden_answers=[["Paris"]] * 6)
    # 1; λ_f + λ_r = 0.3; λ_f = 0.2; 1 − λ_f = 0.8; final format 0.1; no answer, invalid: 0
    assert got == pytest.approx([1.0, 0.3, 0.2, 0.8, 0.1, 0.0])
    rows = reward.breakdown([VALID_CORRECT, wrong_valid_no_gold], golden_answers=[["Paris"]] * 2)
    assert rows[0] == {"em": 1.0, "format_valid": 1.0, "retrieval_hit": 1.0, "total": 1.0}
    assert rows[1]["retrieval_hit"] == 0.0 and rows[1]["format_valid"] == 1.0


def test_trl_reward_funcs_total_first_components_at_weight_zero():
    reward = get_reward("search-r1")
    funcs, weights = reward.trl_reward_funcs()
    assert [f.__name__ for f in funcs] == ["search-r1/total", "search-r1/em", "search-r1/format_valid", "search-r1/retrieval_hit"]
    assert weights == [1.0, 0.0, 0.0, 0.0]
    conversational = [[{"role": "assistant", "content": VALID_CORRECT}]]
    assert [f(conversational, golden_answers=[["Paris"]]) for f in funcs] == [[1.0], [1.0], [1.0], [1.0]]


def test_mismatched_column_length_is_an_error():
    with pytest.raises(EvalsuiteError, match="golden_answers"):
        get_reward("search-r1")([VALID_CORRECT, VALID_CORRECT], golden_answers=[["Paris"]])


# --- Progress -------------------------------------------------------------------------------------------------


def test_progress_eq5_with_coverage():
    reward = get_reward("progress")
    t = turns(("capital of France", [("France", "Paris is the capital")]), ("population of Paris", []))
    # policy: 2 queries; teacher: 3, two of them matched -> P = 2/2, R = 2/3, F1 = 0.8
    teacher = ["capital of France", "population of Paris", "mayor of Paris"]
    row = reward.breakdown(["x"], golden_answers=[["Paris"]], turns=[t], teacher_queries=[teacher], question=["q"])[0]
    assert row["coverage_precision"] == 1.0 and row["coverage_recall"] == pytest.approx(2 / 3)
    assert row["coverage_f1"] == pytest.approx(0.8)
    assert row["total"] == pytest.approx(1.0 + 0.2 + 0.2 * 0.8)


def test_progress_one_to_one_matching_repeated_query_counts_once():
    reward = get_reward("progress")
    t = turns(("capital of France", []), ("capital of France", []))
    row = reward.breakdown(["x"], golden_answers=[["Rome"]], turns=[t], teacher_queries=[["capital of France", "mayor of Paris"]])[0]
    # |I| = 1: P = 1/2, R = 1/2, F1 = 0.5; EM 0 (answer Paris vs Rome), format valid 0.2
    assert row["coverage_f1"] == pytest.approx(0.5)
    assert row["total"] == pytest.approx(0.0 + 0.2 + 0.2 * 0.5)


def test_progress_no_policy_queries_and_no_teacher_queries():
    reward = get_reward("progress")
    direct = [Turn(text="<think>t</think><answer>Paris</answer>", think=["t"], answer="Paris")]
    rows = reward.breakdown(["x", "y"], golden_answers=[["Paris"], ["Paris"]], turns=[direct, turns(("q", []))],
                            teacher_queries=[["capital of France"], []])
    assert rows[0]["coverage_f1"] == 0.0 and rows[0]["coverage_defined"] == 1.0
    assert rows[0]["total"] == pytest.approx(1.2)
    assert rows[1]["coverage_defined"] == 0.0 and rows[1]["total"] == pytest.approx(1.2)


def test_lexical_matcher_threshold():
    assert token_jaccard("the capital of France", "capital of france?") == 1.0
    assert token_jaccard("capital of France", "population of France") == pytest.approx(2 / 4)
    assert LexicalMatcher(0.6)("q", ["capital of France"], ["population of France", "France capital of"]) == [[False, True]]


# --- SubSearch ------------------------------------------------------------------------------------------------


def subsearch_turns():
    # round 1: two sub-queries with distinct docs, one holds the gold; round 2: single query, no gold
    return turns(
        (["capital of France", "river of Paris"], [("France", "Paris is the capital"), ("A", "a"), ("Seine", "the Seine"), ("B", "b")]),
        ("anything", [("C", "nothing here")]),
    )


def test_subsearch_components():
    reward = get_reward("subsearch", {"aggregation": "weighted_sum"})
    row = reward.breakdown(["x"], golden_answers=[["Paris"]], turns=[subsearch_turns()], needs_decomposition=[True])[0]
    assert row["answerability"] == 0.5  # 1 of 2 rounds retrieved the gold
    assert row["decomposition"] == 1.0  # both sub-queries retrieved their own documents
    assert row["total"] == pytest.approx(1.0 + 0.5 * 0.5 + 0.5 * 1.0)


def test_subsearch_decomposition_repeated_and_too_many_subqueries():
    same = turns((["a", "b"], [("X", "x"), ("Y", "y"), ("X", "x"), ("Y", "y")]))
    four = turns((["a", "b", "c", "d"], [("X", "x")] * 4))
    reward = get_reward("subsearch", {"aggregation": "weighted_sum"})
    rows = reward.breakdown(["1", "2"], golden_answers=[["z"], ["z"]], turns=[same, four], needs_decomposition=[True, True])
    assert rows[0]["decomposition"] == 0.0 and rows[1]["decomposition"] == -1.0  # over-decomposition penalty


def test_subsearch_residual_and_no_queries():
    reward = get_reward("subsearch", {"aggregation": "residual", "beta": 0.4})
    direct = [Turn(text="<think>t</think><answer>Rome</answer>", think=["t"], answer="Rome")]
    rows = reward.breakdown(["a", "b", "c"], golden_answers=[["Paris"], ["Lyon"], ["Paris"]],
                            turns=[subsearch_turns(), subsearch_turns(), direct], needs_decomposition=[True] * 3)
    assert rows[0]["total"] == 1.0  # correct: the outcome leaves no residual
    # wrong: answerability 0 (no Lyon in docs), decomposition 1 -> p = 0.5, r = 0 + 1 * 0.4 * 0.5
    assert rows[1]["total"] == pytest.approx(0.2)
    assert rows[2]["total"] == 0.0 and rows[2]["answerability"] == 0.0 and rows[2]["decomposition"] == 0.0


def test_subsearch_adaptive_beta_follows_the_bias_corrected_ema_of_accuracy():
    reward = get_reward("subsearch", {"aggregation": "adaptive_residual", "ema_alpha": 0.5, "beta_max": 0.5})
    wrong = turns(("q", [("D", "Paris")]), answer="Rome")  # a = 1, d = 0 -> p = 0.5
    right = turns(("q", [("D", "Paris")]), answer="Paris")
    first = reward([s for s in "ab"], golden_answers=[["Paris"]] * 2, turns=[right, wrong])
    # m_1 = 0.5 * 0.5 = 0.25, A_1 = 0.25 / (1 - 0.5) = 0.5 (the batch's own accuracy) -> β_1 = 0.5 * (1 - 0.5) = 0.25
    assert first == pytest.approx([1.0, 0.25 * 0.5])
    assert reward.current_beta() == pytest.approx(0.25)
    second = reward(["c"], golden_answers=[["Paris"]], turns=[wrong])
    # m_2 = 0.5 * 0 + 0.5 * 0.25 = 0.125, A_2 = 0.125 / (1 - 0.25) = 1/6 -> β_2 = 0.5 * 5/6
    assert second == pytest.approx([0.5 * 5 / 6 * 0.5])
    assert reward.current_beta() == pytest.approx(5 / 12)


def test_subsearch_rejects_unknown_aggregation():
    with pytest.raises(EvalsuiteError, match="aggregation"):
        get_reward("subsearch", {"aggregation": "sum"})


# --- Search-P1 ------------------------------------------------------------------------------------------------


def planned(plan_text: str, *rounds, answer="Paris"):
    """Turns whose first turn carries the plan the search-p1 method parses from its text."""
    from evalsuite.methods.search_p1.method import SearchP1

    out = turns(*rounds, answer=answer)
    out[0].extra["plan"] = SearchP1().parse_action(plan_text).extra["plan"]
    return out


def test_search_p1_paths_that_execute_their_plan_and_agree_get_full_self_consistency():
    reward = get_reward("search-p1")
    t = planned("<reasoning>Step 1: capital of France</reasoning>", ("capital of France", [("France", "Paris is the capital"), ("Lyon", "a city")]))
    rows = reward.breakdown(["a", "b", "c"], golden_answers=[["Paris"]] * 3, turns=[t, t, t], id=["q1"] * 3)
    for row in rows:
        assert row["plan_execution"] == 1.0 and row["agreement"] == 1.0
        assert row["self_consistency"] == 1.0 and row["path"] == 1.0 and row["format"] == 1.0
        assert row["total"] == pytest.approx(0.1 + 0.3 + 0.6)


def test_search_p1_agreement_jaccard_and_efficiency():
    reward = get_reward("search-p1")
    a = turns(("x", [("A", "a"), ("B", "b")]), answer="no")
    b = turns(("x", [("B", "b"), ("C", "c")]), ("y", [("D", "d")]), answer="no")
    c = turns(("x", [("A", "a"), ("B", "b")]), answer="no")
    rows = reward.breakdown(["1", "2", "3"], golden_answers=[["gold"]] * 3, turns=[a, b, c], id=["q"] * 3)
    # a: J(a,b) = |{B}|/|{A,B,C,D}| = 1/4, J(a,c) = 1 -> 0.625, efficiency min(1, 1/1)
    assert rows[0]["agreement"] == pytest.approx(0.625)
    # b: J = 1/4 and 1/4 -> 0.25, two searches against the group's fewest (1) -> × 1/2
    assert rows[1]["agreement"] == pytest.approx(0.125)
    # no plan: nothing executed, so self-consistency = (0 + agreement) / 2
    assert rows[0]["plan_execution"] == 0.0 and rows[0]["self_consistency"] == pytest.approx(0.3125)
    # wrong answers with no common token are no partial match: soft outcome 0, the path term alone
    assert rows[0]["f1"] == 0.0 and rows[0]["outcome"] == 0.0
    assert rows[0]["total"] == pytest.approx(0.1 * 1.0 + 0.3 * 0.3125)


def test_search_p1_self_consistency_scores_the_execution_of_the_models_own_plan():
    """Two paths of one question with the same evidence: the one that carries out its declared plan scores higher
    (the old self-consistency looked at evidence agreement only and gave both the same)."""
    reward = get_reward("search-p1")
    docs = [("Big Fish", "directed by Tim Burton")]
    plan = "<reasoning>Plan:\nStep 1: director of Big Fish\nStep 2: Tim Burton birthplace</reasoning>"
    follows = planned(plan, ("director of Big Fish", docs), ("Tim Burton birthplace", docs), answer="Burbank")
    strays = planned(plan, ("director of Big Fish", docs), ("Big Fish box office", docs), answer="Burbank")
    rows = reward.breakdown(["a", "b"], golden_answers=[["Burbank"]] * 2, turns=[follows, strays], id=["q"] * 2)
    assert rows[0]["plan_execution"] == 1.0 and rows[1]["plan_execution"] == 0.5
    assert rows[0]["agreement"] == rows[1]["agreement"] == 1.0
    assert rows[0]["self_consistency"] == 1.0 and rows[1]["self_consistency"] == 0.75


def test_search_p1_soft_outcome_gives_partial_answers_partial_credit():
    reward = get_reward("search-p1")
    plan = ["Tim Burton birthplace", "director of Big Fish"]  # order-agnostic
    golds = [["April 14, 1955"]] * 3
    rounds = [("director of Big Fish", [("Big Fish", "Tim Burton")]), ("Tim Burton birthplace", [("TB", "Burbank")])]
    answers = [turns(*rounds, answer=a) for a in ("April 14, 1955", "April 1955", "May 2000")]
    rows = reward.breakdown(["a", "b", "c"], golden_answers=golds, turns=answers, reference_plan=[plan] * 3, question=["q1", "q2", "q3"])
    assert [r["reference_alignment"] for r in rows] == [1.0, 1.0, 1.0] and [r["path"] for r in rows] == [1.0, 1.0, 1.0]
    assert rows[0]["outcome"] == 1.0  # exact match
    # "April 1955": 2 of 2 predicted tokens, 2 of 3 gold tokens -> F1 0.8; outcome 0.5 × (0.8 + 1) / 2
    assert rows[1]["f1"] == pytest.approx(0.8) and rows[1]["outcome"] == pytest.approx(0.45)
    # no common token is no partial match: nothing to decay, outcome 0 (the path is paid by the path term)
    assert rows[2]["f1"] == 0.0 and rows[2]["outcome"] == 0.0
    assert rows[0]["total"] > rows[1]["total"] > rows[2]["total"]


def test_search_p1_failed_answer_with_perfect_reference_path_gets_the_path_term_only():
    reward = get_reward("search-p1")
    t = turns(("director of Big Fish", [("Big Fish", "Tim Burton")]), ("Tim Burton birthplace", [("TB", "Burbank")]), answer="London")
    plan = ["Tim Burton birthplace", "director of Big Fish"]  # order-agnostic
    row = reward.breakdown(["a"], golden_answers=[["Burbank"]], turns=[t], reference_plan=[plan], question=["q"])[0]
    assert row["reference_alignment"] == 1.0 and row["self_consistency"] == 0.0  # no plan of its own, alone in its group
    # "London" shares no token with "Burbank": no partial match, outcome 0; the path term alone pays the path
    assert row["em"] == 0.0 and row["f1"] == 0.0 and row["outcome"] == 0.0
    assert row["total"] == pytest.approx(0.1 + 0.3 * 1.0 + 0.6 * 0.0)


def test_search_p1_reference_alignment_partial_and_redundant():
    reward = get_reward("search-p1")
    t = turns(("director of Big Fish", []), ("director of Big Fish", []), ("director of Big Fish", []), ("weather", []))
    row = reward.breakdown(["a"], golden_answers=[["z"]], turns=[t], reference_plan=[["director of Big Fish", "Tim Burton birthplace"]])[0]
    # 1 of 2 steps covered, 4 searches for 2 steps -> 0.5 × 0.5
    assert row["reference_alignment"] == pytest.approx(0.25)


def test_search_p1_no_queries_and_soft_format():
    reward = get_reward("search-p1")
    bare = [Turn(text="Paris", answer=None)]
    row = reward.breakdown(["a"], golden_answers=[["Paris"]], turns=[bare], reference_plan=[["x"]])[0]
    # no answer (1 check failed), no think (failed), no invalid action (passed) -> 1/3
    assert row["format"] == pytest.approx(1 / 3) and row["path"] == 0.0 and row["total"] == pytest.approx(0.1 / 3)


# --- OASES ----------------------------------------------------------------------------------------------------


def test_oases_summed_credit_telescopes_and_adds_outcome_f1():
    reward = get_reward("oases", {"credit": "sum"})
    t = turns(("q", []), ("q2", []), answer="April 14, 1955")
    # Table 8: γ_0 = 0.333; later states improve
    row = reward.breakdown(["a"], golden_answers=[["April 14, 1955"]], turns=[t], state_scores=[[1 / 3, 0.5, 1.0]])[0]
    assert row["process"] == pytest.approx((0.5 - 1 / 3) + (1.0 - 0.5))
    assert row["total"] == pytest.approx(1.0 + 2 / 3)
    partial = reward.breakdown(["b"], golden_answers=[["April 14, 1955"]], turns=[turns(answer="April 1955")], state_scores=[[0.0]])[0]
    # F1: 2 of 2 predicted tokens, 2 of 3 gold tokens -> 0.8; one state: no process reward
    assert partial["outcome_f1"] == pytest.approx(0.8) and partial["process"] == 0.0 and partial["total"] == pytest.approx(0.8)


def test_oases_turn_credit_leaves_the_steps_to_the_trainer():
    """With per-turn credit (the recipe's), the completion's scalar is the outcome alone: the trainer adds each step's
    γ_t − γ_{t−1} to that step's tokens (tests/training/test_turn_credit.py); the summed process is still logged."""
    reward = get_reward("oases")
    t = turns(("q", []), ("q2", []), answer="April 14, 1955")
    row = reward.breakdown(["a"], golden_answers=[["April 14, 1955"]], turns=[t], state_scores=[[1 / 3, 0.5, 1.0]])[0]
    assert row["total"] == pytest.approx(1.0) and row["process"] == pytest.approx(2 / 3)
    with pytest.raises(EvalsuiteError, match="credit"):
        get_reward("oases", {"credit": "step"})


def test_oases_needs_state_scores():
    with pytest.raises(EvalsuiteError, match="state_scores"):
        get_reward("oases")(["<answer>x</answer>"], golden_answers=[["x"]])


# --- SmartSearch ----------------------------------------------------------------------------------------------


def test_smartsearch_novelty_usefulness_and_scale():
    reward = get_reward("smartsearch")
    t = turns(("a", [("A", "a"), ("B", "b")]), ("b", [("A", "a"), ("B", "b")]), ("c", [("C", "c")]))
    t[0].extra["usefulness"] = 1
    t[1].extra["usefulness"] = 1
    t[2].extra["usefulness"] = 0
    row = reward.breakdown(["x"], golden_answers=[["Paris"]], turns=[t])[0]
    # novelty: 1, 0 (2 repeated docs > K=1), 1; usefulness 1,1,0 -> s = 1,0,0 -> process = 0.2 × (1−1−1)/3
    assert row["novelty"] == pytest.approx(2 / 3) and row["query_score"] == pytest.approx(1 / 3)
    assert row["process"] == pytest.approx(-0.2 / 3)
    assert row["total"] == pytest.approx(1.0 - 0.2 / 3 + 0.1)


def test_smartsearch_outcome_metric_em_by_default_f1_when_chosen():
    t = turns(("a", [("A", "a")]), answer="the city of Paris")
    em_row = get_reward("smartsearch").breakdown(["x"], golden_answers=[["Paris"]], turns=[t])[0]
    f1_row = get_reward("smartsearch", {"outcome_metric": "f1"}).breakdown(["x"], golden_answers=[["Paris"]], turns=[t])[0]
    # answer tokens after normalisation: city, of, paris (3); gold: paris (1) -> P = 1/3, R = 1, F1 = 0.5; EM 0
    assert (em_row["em"], em_row["f1"], em_row["outcome"]) == (0.0, pytest.approx(0.5), 0.0)
    assert f1_row["outcome"] == pytest.approx(0.5)
    # one novel, unjudged query: process 0.2 · (2·1 − 1) / 1; valid format 0.1
    assert em_row["total"] == pytest.approx(0.0 + 0.2 + 0.1) and f1_row["total"] == pytest.approx(0.5 + 0.2 + 0.1)
    with pytest.raises(EvalsuiteError, match="outcome_metric"):
        get_reward("smartsearch", {"outcome_metric": "acc"})


def test_smartsearch_no_queries_and_unjudged_usefulness():
    reward = get_reward("smartsearch")
    direct = [Turn(text="<think>t</think><answer>Rome</answer>", think=["t"], answer="Rome")]
    unjudged = turns(("a", [("A", "a")]))
    rows = reward.breakdown(["x", "y"], golden_answers=[["Paris"], ["Paris"]], turns=[direct, unjudged])
    assert rows[0]["process"] == 0.0 and rows[0]["total"] == pytest.approx(0.1)
    assert rows[1]["usefulness_judged"] == 0.0 and rows[1]["process"] == pytest.approx(0.2)
