"""Each parser's output on fixed trajectories, including the SubSearch and OASES case studies printed in the seeds."""

from __future__ import annotations

import re

import pytest

from evalsuite.baselines.base import after_marker, boxed, first_line
from evalsuite.baselines.ircot import first_sentence
from evalsuite.baselines.search_o1 import extract_information, previous_reasoning
from evalsuite.agent.method import Action, get_method
from evalsuite.methods.oases import method as oases
from evalsuite.methods.search_p1.method import plan_of, plan_steps, tool_call_queries
from evalsuite.metrics.answer import token_scores
from evalsuite.runs.schema import Passage, Turn
from tests.methods.conftest import seed_text


def subsearch_case_turns() -> list[tuple[str, list[str]]]:
    """(question, model turns) of SubSearch's case studies (appendix Tables 5-8): text between observations."""
    cases = []
    for block in seed_text("001").split("Question: ")[1:]:
        question = block.split("\n", 1)[0]
        if not question.endswith("?") or "Ground Truth" not in block:
            continue
        body = block.split("\n", 2)[2].split("\nAppendix")[0]
        cases.append((question, re.split(r"<information>.*?</information>\n", body, flags=re.DOTALL)))
    return cases


def test_subsearch_case_studies_parse_to_the_printed_queries():
    expected = {
        "Which bank has more branches, China CITIC Bank or UniCredit?": [
            ["how many branches does UniCredit have bank"], ["how many branches does China CITIC Bank have"]],
        "Which team did Joe Buck’s father broadcast for?": [["who is joe buck father broadcast"], ["who did jack buck broadcast for"]],
        "In what year did the man who shot Chris Stockley, of The Dingoes, die?": [
            ["when did Chris Stockley of The Dingoes die"], ["who shot Chris Stockley of The Dingoes"]],
        "At what theater is the composer and lyricist for the musical Big Fish a residential artist?": [
            ["what is the theater of Big Fish musical composer lyricist residential artist"], None],
    }
    method = get_method("subsearch")
    cases = dict(subsearch_case_turns())
    assert set(cases) == set(expected)
    for question, turns in cases.items():
        actions = [method.parse_action(method.postprocess(turn)) for turn in turns]
        assert [a.queries if a.kind == "search" else None for a in actions] == expected[question], question
        assert actions[0].think == [turns[0].split("<think>")[1].split("</think>")[0].strip()]


def test_subsearch_splits_on_hashes_into_at_most_three_subqueries():
    method = get_method("subsearch")
    action = method.parse_action("<think> two parts </think>\n<search> UniCredit branches ## China CITIC Bank branches </search>")
    assert action == Action("search", queries=["UniCredit branches", "China CITIC Bank branches"], think=["two parts"])
    many = method.parse_action("<search> a ## b ## ## c ## d ## e </search>")
    assert many.queries == ["a", "b", "c"] and many.extra == {"dropped_subqueries": 2}
    assert method.parse_action("<search> ## ## </search>").kind == "invalid"


class Hit:
    def __init__(self, doc_id, contents):
        self.doc_id, self.contents, self.score = doc_id, contents, 1.0


def test_subsearch_observation_has_one_block_per_subquestion():
    method = get_method("subsearch")
    action = Action("search", queries=["a", "b"])
    results = [[Hit("1", '"UniCredit"\n8,500 branches')], [Hit("2", '"China CITIC Bank"\n1,400 outlets')]]
    observation = method.observation(action, results, lambda text: text)
    assert observation == '\n\n<information>Doc 1(Title: "UniCredit") 8,500 branches ## Doc 1(Title: "China CITIC Bank") 1,400 outlets</information>\n\n'


def test_oases_case_studies_parse_thinking_and_search():
    method = get_method("oases")
    table8 = (
        "<thinking> I need to answer this in two steps. First, I must identify the director of the film ‘‘The Opposite of Sex’’. "
        "Second, I need to find the birth date of that specific director. </thinking>\n<search> director of film The Opposite of Sex </search>"
    )
    action = method.parse_action(table8)
    assert action.kind == "search" and action.queries == ["director of film The Opposite of Sex"]
    assert action.think[0].startswith("I need to answer this in two steps.")
    assert method.parse_action("<think> ok </think><search> director of film Legally Blondes </search>").think == ["ok"]
    assert method.extract_answer("<result> x </result>\n<answer> Don Roos </answer>") == "Don Roos"


def test_oases_observation_is_a_result_block():
    observation = get_method("oases").observation(Action("search", queries=["q"]), [[Hit("1", '"Don Roos"\nDirector.')]], lambda t: t)
    assert observation == '\n\n<result>\nDoc 1(Title: "Don Roos") Director.\n</result>\n\n'


@pytest.mark.parametrize(
    ("evaluation", "gold", "gamma"),
    [
        # OASES Table 8 (s_0), Table 9 (s_0) and Table 7 (s_0, s_1): the printed scores are answer F1 against the gold.
        ("Eval Answer: <eval> April 20, 1962 </eval>", "April 14, 1955", 0.333),
        ("Eval Answer: <eval> University of Southern California (USC) </eval>", "California Institute of the Arts", 0.444),
        ("Eval: <eval> Congress held its first full session </eval>", "reception room", 0.000),
        ("Eval: <eval> 1792 </eval>", "reception room", 0.000),
    ],
)
def test_oases_state_scores_reproduce_the_case_studies(evaluation, gold, gamma):
    answer = oases.parse_eval(evaluation)
    assert round(token_scores(answer, [gold])["f1"], 3) == gamma


def test_oases_search_states_accumulate_passages_and_rewards_are_differences():
    turns = [
        Turn(text="t1", query="q1", passages=[Passage(title="A", text="a")]),
        Turn(text="t2"),
        Turn(text="t3", query="q2", passages=[Passage(title=None, text="b")]),
    ]
    assert oases.search_states(turns) == ["", "(A) a", "(A) a\nb"]
    assert oases.process_rewards([0.0, 0.5, 1.0]) == [0.5, 0.5]


def test_search_p1_records_the_plan_and_reads_tool_calls():
    method = get_method("search-p1")
    text = (
        "<reasoning> Plan:\nStep 1: find the director of Legally Blonde\nStep 2: find where he studied\n</reasoning>\n"
        '<tool_call>{"name": "search", "arguments": {"query": "director of Legally Blonde"}}</tool_call>'
    )
    action = method.parse_action(text)
    assert action.kind == "search" and action.queries == ["director of Legally Blonde"]
    assert action.extra["plan"] == ["find the director of Legally Blonde", "find where he studied"]
    assert plan_of([Turn(text="", extra={}), Turn(text="", extra={"plan": ["x"]})]) == ["x"]
    assert plan_steps("<plan>1. a\n2) b\n</plan><reasoning>Step 1: c</reasoning>") == ["a", "b"]


@pytest.mark.parametrize(
    ("content", "queries"),
    [
        ('{"name": "search", "arguments": {"query": "Robert Luketic education"}}', ["Robert Luketic education"]),
        ('{"name": "search", "arguments": "{\\"query\\": \\"x\\"}"}', ["x"]),
        ('{"query": ["a", "b", "c", "d"]}', ["a", "b", "c"]),
        ("Robert Luketic education", ["Robert Luketic education"]),
        ('{"name": "search", "arguments": {}}', []),
        ('{"name": "search", "arguments": {"query": ', []),
        ("[1, 2]", []),
    ],
)
def test_search_p1_tool_call_queries(content, queries):
    assert tool_call_queries(content) == queries


def test_r1_searcher_parses_its_markers():
    method = get_method("r1-searcher")
    action = method.parse_action(" I should look it up. <|begin_of_query|> Big Fish novel author <|end_of_query|>")
    assert action.kind == "search" and action.queries == ["Big Fish novel author"]
    assert method.observation(action, [[Hit("1", '"Big Fish"\n1998 novel by Daniel Wallace.')]], lambda t: t) == (
        '\n\n<|begin_of_documents|>\n(1)Title: "Big Fish" Text: 1998 novel by Daniel Wallace.\n\n<|end_of_documents|>\n\n'
    )
    assert method.extract_answer("Daniel Wallace. </think>\n\n<answer> Daniel Wallace </answer>") == "Daniel Wallace"


def test_baseline_answer_rules():
    assert first_line("\n\n  Paris \nFrance") == "Paris"
    assert first_line(" \n ") is None
    assert after_marker("Thus not. So the answer is: no.\nMore") == "no."
    assert after_marker("no marker") is None
    assert boxed("so \\boxed{\\text{Titan IIIE}} and \\boxed{Titan {III} E}") == "Titan {III} E"
    assert boxed("\\boxed{unclosed") is None
    assert get_method("cot").extract_answer("Rome is in Italy.") == "Rome is in Italy."
    assert get_method("direct").parse_action("\nJames Madison\nHe was") == Action("answer", answer="James Madison")


def test_ircot_thought_is_the_first_sentence_and_the_answer_marker_ends():
    method = get_method("ircot")
    assert first_sentence(" Citibank was founded in 1812. James Madison was president then.\nmore") == " Citibank was founded in 1812."
    assert first_sentence(" Madison was president. So the answer is: James Madison.") == " Madison was president. So the answer is: James Madison."
    assert method.parse_action(" Citibank was founded in 1812.") == Action("search", queries=["Citibank was founded in 1812."], think=["Citibank was founded in 1812."])
    assert method.parse_action(" So the answer is: James Madison.").answer == "James Madison."
    assert method.parse_action("   ").kind == "invalid"
    assert method.extract_answer(" a.\n\nWikipedia Title: x\ny\n\nThought: So the answer is: Madison") == "Madison"


def test_search_o1_parses_queries_answers_and_condensed_information():
    method = get_method("search-o1")
    assert method.parse_action("I need it.\n<|begin_search_query|>first Nobel physics<|end_search_query|>").queries == ["first Nobel physics"]
    assert method.parse_action("So it is \\boxed{Wilhelm Röntgen}.") == Action("answer", answer="Wilhelm Röntgen")
    assert method.parse_action("<|begin_search_query|>  <|end_search_query|>").kind == "invalid"
    assert extract_information("analysis...\n**Final Information**\n\nRöntgen won\nin 1901.") == "Röntgen wonin 1901."
    assert previous_reasoning("a\n\nb") == "Step 1: a\n\nStep 2: b"
    steps = previous_reasoning("\n".join(["s0", "s1", "<|begin_search_query|>q<|end_search_query|>", "s3", "s4", "s5", "s6", "s7", "s8"]))
    assert steps.split("\n\n") == ["Step 1: s0", "...", "Step 3: <|begin_search_query|>q<|end_search_query|>", "...", "Step 6: s5", "Step 7: s6", "Step 8: s7", "Step 9: s8"]


def test_smartsearch_empty_search_is_an_invalid_action() -> None:
    from evalsuite.agent.method import get_method

    method = get_method("smartsearch")
    assert method.parse_action("<search>   </search>").kind == "invalid"
    assert method.parse_action("<search> q </search>").queries == ["q"]
