"""SmartSearch query refinement: weak queries and their feedback, the rewrite, the prefix cap, and forking a rollout
at a weak query and regenerating from there (real BM25 over the AD-QA corpus, a rule-driven policy)."""

from __future__ import annotations

import pytest

from evalsuite.agent.engine import Rollout, RolloutConfig, RolloutEngine
from evalsuite.methods.smartsearch.method import SmartSearch
from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import Turn
from evalsuite.methods.smartsearch.refinement import (
    ModelRefiner, WeakQuery, expand_groups, parse_refined, pick_branches, query_feedback, refine, replace_query, weak_queries,
)
from tests.methods.conftest import RuleBackend

QUESTION = "Which bidding strategy does the campaign use?"


def searched(query: str, novelty: int, **extra) -> Turn:
    return Turn(text=f"<search> {query} </search>", query=query, extra={"novelty": novelty, "doc_overlap": 0 if novelty else 2, **extra})


def rollout_of(*turns: Turn, key: str = "k") -> Rollout:
    return Rollout(key=key, question=QUESTION, prompt="P", turns=list(turns))


def test_weak_queries_are_the_searched_turns_scoring_zero():
    rollout = rollout_of(
        searched("a", 1), searched("b", 0), searched("c", 1, usefulness=0, usefulness_explanation="off topic"),
        searched("d", 1, usefulness=1), Turn(text="<search> e </search>", query="e"),  # last: the final turn, never searched
    )
    assert [(w.turn_position, w.query) for w in weak_queries(rollout)] == [(1, "b"), (2, "c")]
    assert query_feedback(rollout.turns[1]) == "Not novel: 2 of its retrieved documents had already been retrieved by earlier searches."
    assert query_feedback(rollout.turns[2]) == "Not useful: off topic"
    assert weak_queries(rollout_of(Turn(text="<answer> x </answer>", answer="x"))) == []


def test_the_rewrite_keeps_the_reasoning_and_replaces_only_the_query():
    text = "<think> need the budget </think>\n<search> budget </search> trailing"
    assert replace_query(text, "daily budget of campaign X") == "<think> need the budget </think>\n<search> daily budget of campaign X </search>"
    with pytest.raises(EvalsuiteError, match="<search>"):
        replace_query("<answer> x </answer>", "q")


@pytest.mark.parametrize(("text", "expected"), [
    ("<query> a  better\nquery </query>", "a better query"),
    ("a better query</query>", "a better query"),  # base style: the prompt already opened <query>
    ("\n\n first line \nsecond", "first line"),
    ("   ", None),
    ("<query></query>", None),
])
def test_parse_refined(text, expected):
    assert parse_refined(text) == expected


def test_the_prefix_cap_bounds_branches_per_source():
    group = [rollout_of(searched("a", 1), searched("b", 0), searched("c", 0), key=f"s{i}") for i in range(3)]
    pairs = pick_branches(group, slots=2, max_shared_prefix=2)  # one branch per source at most
    assert [(r.key, w.query) for r, w in pairs] == [("s0", "b"), ("s1", "b")]
    pairs = pick_branches(group[:1], slots=2, max_shared_prefix=3)  # two branches may share s0's prefix
    assert [(r.key, w.query) for r, w in pairs] == [("s0", "b"), ("s0", "c")]
    assert pick_branches(group, slots=2, max_shared_prefix=1) == []  # no sharing at all: no refinement
    assert pick_branches(group, slots=0, max_shared_prefix=3) == []


def policy() -> RuleBackend:
    """Searches 'campaign budget' twice (the second search retrieves the same documents: not novel), then answers;
    as the refiner, proposes a different query."""
    return RuleBackend([
        (lambda p: "Weak query:" in p, "bidding strategy of the campaign</query>"),
        (lambda p: p.count("Doc 1(Title:") >= 2, "<think> enough </think>\n<answer> Target CPA </answer>"),
        (lambda p: True, "<think> look it up </think>\n<search> campaign budget </search>"),
    ])


@pytest.fixture(scope="module")
def engine():
    from evalsuite.agent.default import demo_index_dir
    from evalsuite.retrieval import load_retriever

    backend = policy()
    return RolloutEngine(backend, SmartSearch(), load_retriever(str(demo_index_dir())), RolloutConfig(max_turns=3, max_tokens=64, topk=2), "base")


def test_a_fork_regenerates_from_the_refined_query_on(engine):
    (source,) = engine.run([("s", QUESTION)])
    assert [t.extra.get("novelty") for t in source.turns[:2]] == [1, 0] and source.prediction == "Target CPA"
    (weak,) = weak_queries(source)
    refiner = ModelRefiner(engine.backend, "base")
    (branch,) = refine(engine, refiner, [(source, weak)], ["s~1"])
    # the prefix before the weak turn is the source's, verbatim
    assert branch.turns[0] == source.turns[0] and branch.segments[:2] == source.segments[:2]
    turn = branch.turns[1]
    assert turn.query == "bidding strategy of the campaign" and turn.text == "<think> look it up </think>\n<search> bidding strategy of the campaign </search>"
    assert turn.extra["refined_from"] == "campaign budget" and turn.extra["refine_feedback"].startswith("Not novel")
    assert turn.passages and turn.passages != source.turns[1].passages  # really searched again
    assert branch.segments[2] == (turn.text, True)  # the refined query is trained as the policy's own text
    assert branch.stop_reason == "answer" and branch.prediction == "Target CPA"
    assert branch.response == "".join(text for text, _ in branch.segments)
    prompt = next(r.prompt for r in engine.backend.requests if "Weak query:" in r.prompt)
    assert "Weak query: campaign budget" in prompt and "Feedback: Not novel" in prompt and "- campaign budget" in prompt


def test_groups_get_refined_branches_then_fresh_fillers(engine):
    groups = expand_groups(engine, ModelRefiner(engine.backend, "base"), [(QUESTION, 3), ("What is the daily cap?", 2)], slots=1, max_shared_prefix=2)
    assert [len(g) for g in groups] == [3, 2]
    assert all(r.question == QUESTION for r in groups[0])
    assert ["refined_from" in r.turns[1].extra for r in groups[0]] == [False, False, True]
    assert all(r.done for g in groups for r in g)


def test_a_refiner_that_repeats_the_query_gives_a_fresh_rollout_instead(engine):
    class Echo(RuleBackend):
        pass

    echo = Echo([(lambda p: True, "campaign budget</query>")])
    engine.backend.requests.clear()
    groups = expand_groups(engine, ModelRefiner(echo, "base"), [(QUESTION, 2)], slots=1, max_shared_prefix=2)
    assert len(groups[0]) == 2 and not any("refined_from" in t.extra for r in groups[0] for t in r.turns)
    # the filler is sampled under another seed than the rollout it joins (else a sampling backend repeats it exactly)
    first_turn_seeds = [r.seed for r in engine.backend.requests if r.key[1] == 0]
    assert len(first_turn_seeds) == 2 and first_turn_seeds[0] != first_turn_seeds[1]
    with pytest.raises(EvalsuiteError, match="refine.refiner"):
        from evalsuite.methods.smartsearch.refinement import load_refiner

        load_refiner({"model": "x"}, engine.backend, "base", 8, 0.0, 0)
    assert WeakQuery(1, "q", "f").turn_position == 1
