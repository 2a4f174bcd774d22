"""Every engine hook (initial retrieval, sub-queries, condensing model calls, invalid actions) gives the same
trajectories under the asynchronous schedule as under the turn-synchronous one: the turn is written once and the two
schedules only order its steps differently. Real BM25 index, rule-driven test backend."""

from __future__ import annotations

import asyncio

import pytest

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from tests.methods.conftest import RuleBackend


class AsyncRuleBackend(RuleBackend):
    """The rule backend answering one request at a time, yielding to the event loop first so trajectories interleave."""

    supports_async = True

    async def agenerate(self, request):
        await asyncio.sleep(0)
        return self.generate([request])[0]


QUESTIONS = [("a", "Who composed the Big Fish musical?"), ("b", "Which city has the Colosseum?"), ("c", "Q?")]
CASES = {
    "naive-rag": ([], "Andrew Lippa\nmore text", {}),
    "ircot": ([(lambda p: p.count("Thought:") >= 3, " So the answer is: Daniel Wallace.\n")], " Big Fish is based on a novel.\n", {"max_turns": 4}),
    "search-o1": (
        [
            (lambda p: p.startswith("**Task Instruction:**"), "The pages say...\n**Final Information**\n\nRome is\nthe city."),
            (lambda p: "<|begin_search_result|>Rome" in p, "So the answer is \\boxed{Rome}."),
        ],
        "I should search.\n<|begin_search_query|>Pavia Cathedral<|end_search_query|> ignored", {},
    ),
    "subsearch": ([(lambda p: "</information>" in p.rsplit("Question:", 1)[-1], "<answer> x </answer>")], "<search> Pavia Cathedral ## Absalon ## Yass </search>", {"max_obs_tokens": 5000}),
    "oases": ([(lambda p: p.count("My previous action is invalid") == 2, "<answer> Rome </answer>")], "<serach> Pavia </search", {}),
    "search-r1": ([(lambda p: p.count("<information>") >= 2, "<answer> Rome </answer>")], "<think> look </think><search> Pavia Cathedral </search>", {}),
}


def _untimed(turn) -> dict:
    out = turn.model_dump(exclude={"latency_s", "retrieval_latency_s"})
    if "condense" in out["extra"]:
        out["extra"]["condense"] = {k: v for k, v in out["extra"]["condense"].items() if k != "latency_s"}
    return out


def _content(rollouts):
    return [(r.key, r.prompt, r.response, r.segments, r.stop_reason, r.error, r.prediction, [_untimed(t) for t in r.turns]) for r in rollouts]


@pytest.mark.parametrize("method", sorted(CASES))
def test_async_schedule_plays_every_hook_like_the_turn_synchronous_one(bm25, method):
    rules, default, config = CASES[method]

    def engine(backend):
        return RolloutEngine(backend, get_method(method), bm25, RolloutConfig(**config), "base")

    sync_backend, async_backend = AsyncRuleBackend(rules, default), AsyncRuleBackend(rules, default)
    sync = engine(sync_backend).run(QUESTIONS)
    finished: list[int] = []
    ran_async = asyncio.run(engine(async_backend).run_async(QUESTIONS, max_in_flight=2, on_finished=lambda i, r: finished.append(i)))
    assert _content(ran_async) == _content(sync)
    assert sorted(finished) == [0, 1, 2]
    assert sorted(r.prompt for r in async_backend.requests) == sorted(r.prompt for r in sync_backend.requests)
    assert any(t.query or t.sub_queries or t.invalid_action for r in sync for t in r.turns)  # each case searches (oases: invalid actions)
