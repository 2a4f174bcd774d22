"""The batched rollout loop: one backend call and one retrieval call per turn, budgets, stop reasons, faults."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.agent.engine import RetrievalUnavailable, RolloutConfig, RolloutEngine, model_text
from evalsuite.methods.search_r1.method import SearchR1
from evalsuite.protocol.search_r1 import INVALID_ACTION
from evalsuite.models.base import Backend, Generation, GenerationRequest, cut_at_stop


class ScriptedBackend(Backend):
    """Answers turn t of example k with script[k][t] (or `default`), cut at the stop strings like a real engine."""

    name = "scripted"

    def __init__(self, script: dict[str, list[str]], default: str = "", fail: set[str] = frozenset()):
        self.script = script
        self.default = default
        self.fail = fail
        self.calls: list[list[GenerationRequest]] = []

    def generate(self, requests):
        self.calls.append(list(requests))
        out = []
        for request in requests:
            key, turn = request.key
            if key in self.fail:
                out.append(Generation(text="", finish_reason="error", error=f"backend down for {key}"))
                continue
            turns = self.script.get(key, [])
            text = turns[turn] if turn < len(turns) else self.default
            text, stop = cut_at_stop(text, request.stop)
            words = text.split()
            if len(words) > request.max_tokens:
                text, stop = " ".join(words[: request.max_tokens]), None
            out.append(Generation(text=text, completion_tokens=len(text.split()), finish_reason="stop" if stop else "length", stop_string=stop))
        return out

    def count_tokens(self, text):
        return len(text.split())

    def truncate_tokens(self, text, max_tokens):
        return " ".join(text.split(" ")[:max_tokens])


@dataclass
class H:
    doc_id: str
    contents: str
    score: float = 1.0


class DictRetriever:
    def __init__(self, docs: dict[str, list[str]], fail_after: int | None = None):
        self.docs = docs
        self.calls: list[list[str]] = []
        self.fail_after = fail_after

    def search(self, queries, k):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise ConnectionError("retrieval server went away")
        self.calls.append(list(queries))
        return [[H(f"{q}-{i}", c) for i, c in enumerate(self.docs.get(q, [])[:k])] for q in queries]


def engine(backend, retriever, **config):
    return RolloutEngine(backend, SearchR1(), retriever, RolloutConfig(**config), "base")


def test_search_then_answer_builds_the_exact_trajectory():
    backend = ScriptedBackend({"a": ["<think> find it </think><search> big fish </search> ignored", "<answer> Daniel Wallace </answer>"]})
    retriever = DictRetriever({"big fish": ['"Big Fish"\nA 1998 novel by Daniel Wallace.', '"Tim Burton"\nDirector.']})
    (rollout,) = engine(backend, retriever, topk=2).run([("a", "Who wrote Big Fish?")])
    assert rollout.response == (
        "<think> find it </think><search> big fish </search>"
        '\n\n<information>Doc 1(Title: "Big Fish") A 1998 novel by Daniel Wallace.\nDoc 2(Title: "Tim Burton") Director.</information>\n\n'
        "<answer> Daniel Wallace </answer>"
    )
    assert rollout.prediction == "Daniel Wallace"
    assert rollout.stop_reason == "answer"
    first, second = rollout.turns
    assert first.query == "big fish" and [p.title for p in first.passages] == ["Big Fish", "Tim Burton"]
    assert [p.doc_id for p in first.passages] == ["big fish-0", "big fish-1"]
    assert second.answer == "Daniel Wallace" and second.passages == []


def three_finishing_at_turns_1_2_3() -> tuple[ScriptedBackend, DictRetriever]:
    """a answers at its second turn, b at its third, c at its first."""
    script = {
        "a": ["<search> qa </search>", "<answer> A </answer>"],
        "b": ["<search> qb </search>", "<search> qb2 </search>", "<answer> B </answer>"],
        "c": ["<answer> C </answer>"],
    }
    return ScriptedBackend(script), DictRetriever({"qa": ['"A"\na'], "qb": ['"B"\nb'], "qb2": ['"B2"\nb2']})


def test_each_turn_is_one_backend_call_and_one_retrieval_call_for_the_whole_batch():
    backend, retriever = three_finishing_at_turns_1_2_3()
    rollouts = engine(backend, retriever).run([("a", "qa?"), ("b", "qb?"), ("c", "qc?")])
    assert [[r.key[0] for r in call] for call in backend.calls] == [["a", "b", "c"], ["a", "b"], ["b"]]
    assert retriever.calls == [["qa", "qb"], ["qb2"]]
    assert [r.prediction for r in rollouts] == ["A", "B", "C"]


def test_invalid_action_gets_search_r1s_message_and_the_loop_goes_on():
    backend = ScriptedBackend({"a": ["I am not sure.", "<answer> x </answer>"]})
    (rollout,) = engine(backend, DictRetriever({})).run([("a", "q?")])
    assert rollout.response == "I am not sure." + INVALID_ACTION + "<answer> x </answer>"
    assert rollout.turns[0].invalid_action and not rollout.turns[1].invalid_action


class AsyncScripted(ScriptedBackend):
    """The same script, served one request at a time (the asynchronous schedule)."""

    supports_async = True

    async def agenerate(self, request):
        (generation,) = self.generate([request])
        return generation


@pytest.mark.parametrize("schedule", ["sync", "async"])
def test_the_invalid_action_messages_tags_never_answer(schedule):
    # Search-R1's message says "...between <answer> and </answer>...": over the whole response a rollout that never
    # answered would predict "and". The answer is read from the model's own text only.
    import asyncio

    backend = AsyncScripted({"a": ["I am not sure.", "Still not sure."], "b": ["Hmm.", "<answer> x </answer>"]})
    eng = engine(backend, DictRetriever({}), max_turns=1)
    items = [("a", "q?"), ("b", "q?")]
    a, b = eng.run(items) if schedule == "sync" else asyncio.run(eng.run_async(items))
    assert "<answer> and </answer>" in a.response and a.turns[0].invalid_action
    assert a.stop_reason == "max_turns" and a.prediction is None
    assert b.prediction == "x"  # a real answer after an invalid action still counts
    assert model_text(a) == "I am not sure.Still not sure."


def test_max_turns_then_one_final_turn_without_search():
    backend = ScriptedBackend({}, default="<search> again </search>")
    (rollout,) = engine(backend, DictRetriever({"again": ['"T"\nt']}), max_turns=2).run([("a", "q?")])
    assert len(rollout.turns) == 3  # two turns with search, then the final turn
    assert rollout.response.count("<information>") == 2
    assert rollout.response.endswith("<search> again </search>")
    assert rollout.stop_reason == "max_turns" and rollout.prediction is None


def test_context_budget_cuts_a_model_that_floods_the_context():
    backend = ScriptedBackend({}, default="word " * 1000)
    (rollout,) = engine(backend, DictRetriever({}), max_tokens=40, max_context_tokens=200).run([("a", "q?")])
    prompt, invalid = rollout.prompt_tokens, len(INVALID_ACTION.split())
    # turn 1 gets the full 40; turn 2 what is left of 200 after prompt + 40 + the invalid-action message; then none
    assert [call[0].max_tokens for call in backend.calls] == [40, 200 - (prompt + 40 + invalid)]
    assert rollout.stop_reason == "context_budget"
    assert [t.finish_reason for t in rollout.turns] == ["length", "length"]


def test_observation_is_cut_to_max_obs_tokens_and_stays_closed():
    backend = ScriptedBackend({"a": ["<search> q </search>", "<answer> x </answer>"]})
    retriever = DictRetriever({"q": ['"T"\n' + "w " * 50]})
    (rollout,) = engine(backend, retriever, max_obs_tokens=10).run([("a", "q?")])
    block = rollout.response.split("<information>")[1].split("</information>")[0]
    assert len(block.split()) == 10 and "</information>\n\n<answer>" in rollout.response


def test_a_backend_error_fails_only_that_example():
    backend = ScriptedBackend({"a": ["<answer> A </answer>"], "b": ["<answer> B </answer>"]}, fail={"b"})
    a, b = engine(backend, DictRetriever({})).run([("a", "q?"), ("b", "q?")])
    assert (a.stop_reason, a.error, a.prediction) == ("answer", None, "A")
    assert b.stop_reason == "error" and b.error == "backend down for b"


def test_a_backend_exception_fails_the_batch_without_raising():
    class Broken(ScriptedBackend):
        def generate(self, requests):
            raise RuntimeError("CUDA out of memory")

    rollouts = engine(Broken({}), DictRetriever({})).run([("a", "q?"), ("b", "q?")])
    assert [r.error for r in rollouts] == ["RuntimeError: CUDA out of memory"] * 2


def test_a_failing_retriever_stops_the_run_without_a_second_retry_loop():
    backend = ScriptedBackend({}, default="<search> q </search>")
    retriever = DictRetriever({"q": []}, fail_after=0)
    with pytest.raises(RetrievalUnavailable, match="went away"):
        engine(backend, retriever).run([("a", "q?")])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab <>/searchnswrtiofmd\n")), max_size=80), min_size=1, max_size=6))
def test_arbitrary_model_text_never_crashes_the_loop(turns):
    backend = ScriptedBackend({"a": turns}, default="")
    (rollout,) = engine(backend, DictRetriever({}), max_turns=3).run([("a", "q?")])
    assert rollout.stop_reason in {"answer", "max_turns", "context_budget"}
    assert len(rollout.turns) <= 4


def test_the_synchronous_schedule_hands_over_each_rollout_after_the_turn_that_finishes_it():
    # c answers at turn 1, a at turn 2, b at turn 3: each is handed over (with its prediction) after its own turn,
    # while the backend has seen only the calls up to that turn, not once the whole batch is done
    backend, retriever = three_finishing_at_turns_1_2_3()
    handed: list[tuple[int, str, int]] = []
    engine(backend, retriever).run([("a", "qa?"), ("b", "qb?"), ("c", "qc?")],
                                   lambda index, rollout: handed.append((index, rollout.prediction, len(backend.calls))))
    assert handed == [(2, "C", 1), (0, "A", 2), (1, "B", 3)]
