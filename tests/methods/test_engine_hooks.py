"""The engine hooks the baselines and methods use, run with a real BM25 index and a rule-driven test backend."""

from __future__ import annotations

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.methods.oases.method import INVALID_ACTION as OASES_INVALID
from evalsuite.scoring import behaviour_metrics
from tests.methods.conftest import RuleBackend


class CountingRetriever:
    """The real BM25 retriever, counting calls so batching is visible."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def search(self, queries, k):
        self.calls.append(list(queries))
        return self.inner.search(queries, k)


def engine(method: str, backend, retriever, style: str = "base", **config) -> RolloutEngine:
    return RolloutEngine(backend, get_method(method), retriever, RolloutConfig(**config), style)


def test_naive_rag_retrieves_once_with_every_question_before_the_first_turn(bm25):
    retriever = CountingRetriever(bm25)
    backend = RuleBackend([], default="Andrew Lippa\nmore text")
    rollouts = engine("naive-rag", backend, retriever).run([("a", "Big Fish musical composer?"), ("b", "Colosseum city?")])
    assert retriever.calls == [["Big Fish musical composer?", "Colosseum city?"]]
    expected_hits = bm25.search(["Big Fish musical composer?"], 3)[0]
    first = rollouts[0]
    assert first.turns[0].text == "" and first.turns[0].extra == {"initial_retrieval": True}
    assert [p.doc_id for p in first.turns[0].passages] == [h.doc_id for h in expected_hits]
    assert "Doc 1(Title: " + expected_hits[0].contents.split("\n")[0] + ")" in first.prompt
    assert first.prediction == "Andrew Lippa" and first.stop_reason == "answer" and len(first.turns) == 2


def test_ircot_turns_each_thought_into_the_next_query(bm25):
    retriever = CountingRetriever(bm25)
    backend = RuleBackend(
        [
            (lambda p: p.count("Thought:") >= 4, " So the answer is: Daniel Wallace.\n"),
            (lambda p: p.count("Thought:") == 3, " The novel was written by Daniel Wallace. It was adapted.\n"),
        ],
        default=" Big Fish is based on a novel.\n",
    )
    (rollout,) = engine("ircot", backend, retriever, max_turns=4).run([("a", "Who wrote the novel Big Fish is based on?")])
    assert retriever.calls == [
        ["Who wrote the novel Big Fish is based on?"],
        ["Big Fish is based on a novel."],
        ["The novel was written by Daniel Wallace."],
    ]
    assert [t.query for t in rollout.turns] == ["Who wrote the novel Big Fish is based on?", "Big Fish is based on a novel.", "The novel was written by Daniel Wallace.", None]
    assert rollout.prediction == "Daniel Wallace." and rollout.stop_reason == "answer"
    assert rollout.response.count("Wikipedia Title: ") == 6  # two retrieval steps of top-3 appended after the thoughts
    assert behaviour_metrics(rollout.turns, rollout.prediction)["n_searches"] == 3.0


def test_search_o1_condenses_documents_with_one_batched_extra_call(bm25):
    backend = RuleBackend(
        [
            (lambda p: p.startswith("**Task Instruction:**"), "The pages say...\n**Final Information**\n\nRome is\nthe city."),
            (lambda p: "<|begin_search_result|>Rome" in p, "So the answer is \\boxed{Rome}."),
        ],
        default="I should search.\n<|begin_search_query|>Pavia Cathedral<|end_search_query|> ignored",
    )
    rollouts = engine("search-o1", backend, bm25).run([("a", "Where is the Colosseum?"), ("b", "Which city has the Colosseum?")])
    condense_calls = [r for r in backend.requests if r.prompt.startswith("**Task Instruction:**")]
    assert len(condense_calls) == 2
    assert '**Current Search Query:**  \nPavia Cathedral\n' in condense_calls[0].prompt and "**Web Page 1:**" in condense_calls[0].prompt
    for rollout in rollouts:
        assert "<|begin_search_result|>Rome isthe city.<|end_search_result|>" in rollout.response
        assert rollout.turns[0].extra["condense"]["text"].endswith("the city.")
        assert rollout.prediction == "Rome" and rollout.turns[0].passages


def test_subsearch_retrieves_all_subquestions_of_a_turn_in_one_call(bm25):
    retriever = CountingRetriever(bm25)
    backend = RuleBackend([(lambda p: "</information>" in p.split("Question: Q?")[-1], "<answer> x </answer>")], default="<search> Pavia Cathedral ## Absalon ## Yass, New South Wales ## extra </search>")
    (rollout,) = engine("subsearch", backend, retriever, max_obs_tokens=5000).run([("a", "Q?")])
    hits = bm25.search(["Pavia Cathedral", "Absalon", "Yass, New South Wales"], 3)
    assert retriever.calls == [["Pavia Cathedral", "Absalon", "Yass, New South Wales"]]
    assert rollout.turns[0].sub_queries == ["Pavia Cathedral", "Absalon", "Yass, New South Wales"] and rollout.turns[0].extra == {"dropped_subqueries": 1}
    assert rollout.response.count(" ## Doc 1(Title: ") == 2
    assert [p.doc_id for p in rollout.turns[0].passages] == [h.doc_id for per_query in hits for h in per_query]


def test_smartsearch_records_novelty_per_search_and_usefulness_with_a_judge(bm25):
    from evalsuite.methods.smartsearch.method import SmartSearch

    judged = []

    def judge(question, history, turn):
        judged.append((question, len(history), turn.query))
        return len(history) == 0, "new evidence" if not history else "repeats the first search"

    backend = RuleBackend(
        [(lambda p: p.count("<information>") == 3, "<answer> Rome </answer>")],
        default="<think> look </think><search> Pavia Cathedral </search>",
    )
    method = SmartSearch(judge=judge)
    (rollout,) = RolloutEngine(backend, method, bm25, RolloutConfig(), "base").run([("a", "Q?")])
    first, second = rollout.turns[0].extra, rollout.turns[1].extra
    assert (first["doc_overlap"], first["novelty"]) == (0, 1)
    # only two passages of the small corpus match, and the repeated query retrieves both again: 2 > K = 1
    assert (second["doc_overlap"], second["novelty"], second["novelty_max_overlap"]) == (2, 0, 1)
    assert (second["usefulness"], second["query_score"]) == (0, 0) and second["usefulness_explanation"] == "repeats the first search"
    assert judged == [("Q?", 0, "Pavia Cathedral"), ("Q?", 1, "Pavia Cathedral")]
    assert rollout.turns[0].think == ["look"]
    plain = RolloutEngine(backend, get_method("smartsearch"), bm25, RolloutConfig(), "base").run([("a", "Q?")])[0]
    assert "usefulness" not in plain.turns[0].extra and plain.turns[0].extra["novelty"] == 1


def test_search_p1_plan_reaches_the_turn_record(bm25):
    backend = RuleBackend(
        [(lambda p: "<tool_response>" in p.split("Question: Q?")[-1], "<reasoning> found it </reasoning><answer> Rome </answer>")],
        default='<reasoning> Step 1: find the Colosseum\nStep 2: name its city </reasoning><tool_call>{"name": "search", "arguments": {"query": "Pavia Cathedral"}}</tool_call>',
    )
    (rollout,) = engine("search-p1", backend, bm25).run([("a", "Q?")])
    assert rollout.turns[0].extra["plan"] == ["find the Colosseum", "name its city"] and rollout.turns[0].query == "Pavia Cathedral"
    assert "\n\n<tool_response>\nDoc 1(Title: " in rollout.response and rollout.prediction == "Rome"


def test_malformed_actions_take_the_invalid_path_and_are_counted(bm25):
    backend = RuleBackend([(lambda p: p.count("My previous action is invalid") == 2, "<answer> Rome </answer>")], default="<serach> Pavia </search")
    (rollout,) = engine("oases", backend, bm25).run([("a", "Q?")])
    assert rollout.response.count(OASES_INVALID) == 2 and [t.invalid_action for t in rollout.turns] == [True, True, False]
    assert behaviour_metrics(rollout.turns, rollout.prediction)["n_invalid"] == 2.0 and rollout.prediction == "Rome"
