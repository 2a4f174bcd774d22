"""SubSearch's over-decomposition penalty reaches the reward: the method executes at most 3 sub-queries (Table 1),
but the reward sees how many the model wrote. Played through the real rollout engine, the real SubSearch parser and
real BM25 retrieval over the shipped AD-QA corpus; only the model's text is scripted."""

from __future__ import annotations

import pytest

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.rewards import get_reward
from evalsuite.methods.subsearch.reward import decomposition, requested_subqueries
from evalsuite.runs.schema import Turn
from tests.agent.test_rollout_engine import ScriptedBackend

QUESTION = "Which bidding strategy and which audience targeting does a conversion campaign use?"
SPLITS = {
    "two": "<think>two parts</think>\n<search> bidding strategy ## audience targeting </search>",
    "four": "<think>four parts</think>\n<search> bidding strategy ## audience targeting ## conversion tracking ## campaign budget </search>",
    "none": "<think>one query</think>\n<search> conversion campaign bidding strategy </search>",
}
ANSWER = "<think>done</think>\n<answer> target CPA </answer>"


@pytest.fixture(scope="module")
def played():
    from evalsuite.agent.runner import load_retriever_spec

    backend = ScriptedBackend({key: [text, ANSWER] for key, text in SPLITS.items()})
    engine = RolloutEngine(backend, get_method("subsearch"), load_retriever_spec("adqa", None), RolloutConfig(max_turns=2, topk=2), "base")
    return {rollout.key: rollout for rollout in engine.run([(key, QUESTION) for key in SPLITS])}


def test_the_method_executes_three_and_records_the_fourth(played):
    four = played["four"].turns[0]
    assert four.sub_queries == ["bidding strategy", "audience targeting", "conversion tracking"]
    assert four.extra["dropped_subqueries"] == 1
    assert len(four.passages) == 3 * 2  # three sub-queries retrieved, top-2 each
    assert requested_subqueries(four) == 4 and requested_subqueries(played["two"].turns[0]) == 2


def test_a_four_way_split_gets_the_over_decomposition_penalty(played):
    reward = get_reward("subsearch", {"aggregation": "residual", "beta": 0.5})
    rows = {}
    for key, rollout in played.items():
        turns = [t.model_dump() for t in rollout.turns]
        # an AD-QA question is multi-hop: a split is what it needs, up to 3 parts
        rows[key] = reward.breakdown([rollout.response], golden_answers=[["no such answer"]], turns=[turns], needs_decomposition=[True])[0]
    assert rows["four"]["decomposition"] == -1.0
    assert rows["none"]["decomposition"] == 0.0
    assert rows["two"]["decomposition"] > 0.0
    # a wrong answer after a four-way split earns less than one that did not decompose at all
    assert rows["four"]["total"] < rows["none"]["total"] <= rows["two"]["total"]


def test_text_parsed_turns_count_the_query_parts_too():
    split = Turn(text="x", query="a ## b ## c ## d")
    assert requested_subqueries(split) == 4 and decomposition([split]) == -1.0
    assert decomposition([split], penalty=0.5) == -0.5
    assert requested_subqueries(Turn(text="x", query="a ## b")) == 2 and decomposition([Turn(text="x", query="a ## b")]) == 0.0
    assert requested_subqueries(Turn(text="x", query="plain")) == 1
