"""The batched rollout loop (docs/agent.md): one backend call and one retrieval call per turn for the whole batch.

Search-R1's `run_llm_loop`: up to `max_turns` turns in which a search gets an observation and a turn with no valid
action gets the fixed invalid-action message, then one final turn with search disabled for whoever has not answered.
Budgets (per-turn `max_tokens`, `max_obs_tokens`, total `max_context_tokens`) cut models that loop or flood the
context; nothing here raises on model text.

Failures: a failed generation fails its example; a search the retrieval server rejects (4xx, e.g. an over-long
query) fails the example that made it, and the batch goes on; a retriever that stays unreachable after its own
retries (see `evalsuite.retry`; the engine adds none) raises `RetrievalUnavailable`, which stops the run with every
finished example kept.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalsuite.agent.method import Action, HitLike, Method
from evalsuite.errors import EvalsuiteError, RequestRejected
from evalsuite.models.base import Backend, Generation, GenerationRequest
from evalsuite.protocol.passages import hit_passage
from evalsuite.retry import describe
from evalsuite.runs.schema import Turn


class Retriever(Protocol):
    def search(self, queries: list[str], k: int) -> list[list[HitLike]]: ...


class RetrievalUnavailable(EvalsuiteError):
    """The retriever kept failing after its retries; the run stops with everything finished kept."""


# Per search: its hits per query, or the server's refusal of it.
SearchOutcome = list[list[HitLike]] | RequestRejected


@dataclass(frozen=True)
class RolloutConfig:
    """Limits and decoding of a rollout. Defaults follow Search-R1's evaluation (4 turns, top-3, greedy, 500/500)."""

    max_turns: int = 4
    max_tokens: int = 500
    max_obs_tokens: int = 500
    max_context_tokens: int = 4096
    topk: int = 3
    temperature: float = 0.0
    seed: int = 0

    def decoding(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "max_obs_tokens": self.max_obs_tokens,
            "max_context_tokens": self.max_context_tokens,
        }


@dataclass
class Rollout:
    """One example's trajectory as it grows."""

    key: str
    question: str
    prompt: str
    prompt_tokens: int = 0
    response: str = ""
    context_tokens: int = 0
    turns: list[Turn] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None
    prediction: str | None = None
    # `response` as (text, generated_by_model) pieces in order: training masks the environment's pieces out of the loss.
    segments: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.stop_reason is not None


@dataclass
class _Pending:
    rollout: Rollout
    turn: Turn
    action: Action


def model_turns(rollout: Rollout) -> int:
    """Turns the model has taken (retrieval before the first model turn is not one): the next turn's index."""
    return sum(1 for t in rollout.turns if not t.extra.get("initial_retrieval"))


class RolloutEngine:
    """Runs a method's protocol with a backend and a retriever over batches of questions."""

    def __init__(self, backend: Backend, method: Method, retriever: Retriever | None, config: RolloutConfig, style: str):
        self.backend = backend
        self.method = method
        self.retriever = retriever
        self.config = config
        self.style = style

    def start(self, key: str, question: str, initial: SearchOutcome | None = None) -> Rollout:
        """A fresh rollout with its prompt built and counted (`initial`: hits of the method's initial queries).

        When the retrieval server rejects the initial queries, the rollout comes back failed with the reason."""
        queries = self.method.initial_queries(question)
        if queries and initial is None:
            (initial,) = self._search_each([queries])
        if isinstance(initial, RequestRejected):
            prompt = self.method.prompt(question, self.style, self.backend.chat_template)
            return Rollout(key=key, question=question, prompt=prompt, stop_reason="error", error=_rejected(queries, initial))
        if not queries:
            prompt = self.method.prompt(question, self.style, self.backend.chat_template)
        else:
            prompt = self.method.prompt_with_passages(question, self.style, self.backend.chat_template, initial, self._truncate_obs)
        tokens = self.backend.count_tokens(prompt)
        rollout = Rollout(key=key, question=question, prompt=prompt, prompt_tokens=tokens, context_tokens=tokens)
        if queries:
            # Retrieval before any model turn is recorded as turn 0 with no text, so its passages are scored.
            rollout.turns.append(
                Turn(
                    text="",
                    query=queries[0] if len(queries) == 1 else None,
                    sub_queries=queries if len(queries) > 1 else [],
                    passages=[hit_passage(hit) for per_query in initial for hit in per_query],
                    extra={"initial_retrieval": True},
                )
            )
        return rollout

    def run(self, items: Sequence[tuple[str, str]]) -> list[Rollout]:
        """Roll out every (key, question) pair to completion; returns them in input order."""
        return self.finish(self._start_all(items))

    def finish(self, rollouts: list[Rollout]) -> list[Rollout]:
        """Play every unfinished rollout on from the turn it has reached (forks resume mid-way) and extract answers."""
        while active := [r for r in rollouts if not r.done]:
            by_turn: dict[int, list[Rollout]] = {}
            for rollout in active:
                by_turn.setdefault(model_turns(rollout), []).append(rollout)
            for turn_index, group in sorted(by_turn.items()):
                self.step(group, turn_index, final=turn_index >= self.config.max_turns)
        for rollout in rollouts:
            rollout.prediction = self.method.extract_answer(rollout.response)
        return rollouts

    def fork(self, source: Rollout, turn_position: int, text: str, key: str, extra: dict[str, Any] | None = None) -> Rollout:
        """A new rollout sharing `source`'s prefix before its turn `turn_position`, where the model is taken to have
        written `text` instead (SmartSearch's query refinement); that turn is played (searched) and the result is
        left unfinished for `finish`."""
        kept = source.turns[:turn_position]
        kept_model_turns = sum(1 for t in kept if not t.extra.get("initial_retrieval"))
        segments, seen = [], 0
        for segment in source.segments:
            if segment[1]:
                if seen == kept_model_turns:
                    break
                seen += 1
            segments.append(segment)
        response = "".join(piece for piece, _ in segments)
        fork = Rollout(
            key=key, question=source.question, prompt=source.prompt, prompt_tokens=source.prompt_tokens,
            response=response, context_tokens=source.prompt_tokens + (self.backend.count_tokens(response) if response else 0),
            turns=[t.model_copy(deep=True) for t in kept], segments=list(segments),
        )
        generation = Generation(text=text, completion_tokens=self.backend.count_tokens(text), finish_reason="stop")
        searches: list[_Pending] = []
        self._take_turn(fork, generation, final=kept_model_turns >= self.config.max_turns, searches=searches)
        fork.turns[-1].extra.update(extra or {})
        if searches:
            self._observe(searches)
        return fork

    def step(self, active: list[Rollout], turn_index: int, final: bool) -> None:
        """One turn for all active rollouts: a batched generation, then one retrieval call for all searches."""
        requests: list[GenerationRequest] = []
        asking: list[Rollout] = []
        for rollout in active:
            budget = min(self.config.max_tokens, self.config.max_context_tokens - rollout.context_tokens)
            if budget <= 0:
                rollout.stop_reason = "context_budget"
                continue
            requests.append(
                GenerationRequest(
                    prompt=rollout.prompt + rollout.response,
                    stop=list(self.method.stop),
                    max_tokens=budget,
                    temperature=self.config.temperature,
                    seed=self.config.seed,
                    key=(rollout.key, turn_index),
                )
            )
            asking.append(rollout)
        if not requests:
            return
        generations = self._generate(requests)
        searches: list[_Pending] = []
        for rollout, generation in zip(asking, generations):
            self._take_turn(rollout, generation, final, searches)
        if searches:
            self._observe(searches)

    def _take_turn(self, rollout: Rollout, generation: Generation, final: bool, searches: list[_Pending]) -> None:
        """Record one generated turn: an answer ends the rollout, a search is queued in `searches`, anything else
        gets the method's invalid-action message."""
        if generation.error is not None:
            rollout.error = generation.error
            rollout.stop_reason = "error"
            return
        text = self.method.postprocess(generation.text)
        completion_tokens = generation.completion_tokens if text == generation.text and generation.completion_tokens is not None else self.backend.count_tokens(text)
        action = self.method.parse_action(text)
        turn = Turn(
            text=text,
            think=list(action.think),
            query=action.queries[0] if len(action.queries) == 1 else None,
            sub_queries=action.queries if len(action.queries) > 1 else [],
            answer=action.answer,
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=generation.latency_s,
            finish_reason=generation.finish_reason,
            extra=dict(action.extra),
        )
        rollout.turns.append(turn)
        rollout.response += text
        rollout.segments.append((text, True))
        rollout.context_tokens += completion_tokens
        if action.kind == "answer":
            rollout.stop_reason = "answer"
        elif final:
            rollout.stop_reason = "max_turns"  # the final turn runs with search disabled
        elif action.kind == "search":
            searches.append(_Pending(rollout, turn, action))
        else:
            turn.invalid_action = True
            self._append(rollout, self.method.invalid_observation())

    def _generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        start = time.perf_counter()
        try:
            generations = self.backend.generate(requests)
        except EvalsuiteError:
            raise
        except Exception as exc:  # a backend failure fails this batch's examples, not the run
            message = f"{type(exc).__name__}: {exc}"
            return [Generation(text="", finish_reason="error", error=message) for _ in requests]
        if len(generations) != len(requests):
            raise EvalsuiteError(f"backend {self.backend.name} returned {len(generations)} generations for {len(requests)} prompts")
        elapsed = time.perf_counter() - start
        for generation in generations:
            if not generation.latency_s:
                generation.latency_s = elapsed
        return generations

    def _observe(self, searches: list[_Pending]) -> None:
        start = time.perf_counter()
        outcomes = self._search_each([pending.action.queries for pending in searches])
        elapsed = time.perf_counter() - start
        answered: list[_Pending] = []
        per_search: list[list[list[HitLike]]] = []
        for pending, hits in zip(searches, outcomes):
            pending.turn.retrieval_latency_s = elapsed
            if isinstance(hits, RequestRejected):
                pending.rollout.error = _rejected(pending.action.queries, hits)
                pending.rollout.stop_reason = "error"
                continue
            pending.turn.passages = [hit_passage(hit) for per_query in hits for hit in per_query]
            self.method.annotate_search(pending.rollout.question, pending.rollout.turns[:-1], pending.turn)
            answered.append(pending)
            per_search.append(hits)
        searches = answered
        condensing = [
            (pending, hits, prompt)
            for pending, hits in zip(searches, per_search)
            if (prompt := self.method.condense_prompt(pending.rollout.question, pending.rollout.response, pending.action, hits, self.style, self.backend.chat_template, self._truncate_obs)) is not None
        ]
        condensed = self._condense(condensing)
        for pending, hits in zip(searches, per_search):
            if id(pending) in condensed:
                observation = self.method.condensed_observation(pending.action, condensed[id(pending)])
            else:
                observation = self.method.observation(pending.action, hits, self._truncate_obs)
            self._append(pending.rollout, observation)

    def _condense(self, condensing: list[tuple[_Pending, list[list[HitLike]], str]]) -> dict[int, str]:
        """One batched extra model call that condenses documents (Search-o1); its text and cost go in Turn.extra."""
        if not condensing:
            return {}
        requests = [
            GenerationRequest(
                prompt=prompt, stop=[], max_tokens=self.config.max_obs_tokens, temperature=self.config.temperature,
                seed=self.config.seed, key=(pending.rollout.key, -len(pending.rollout.turns)),
            )
            for pending, _, prompt in condensing
        ]
        generations = self._generate(requests)
        out: dict[int, str] = {}
        for (pending, _, _), generation in zip(condensing, generations):
            text = generation.text if generation.error is None else ""
            pending.turn.extra["condense"] = {
                "text": text, "prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens,
                "latency_s": generation.latency_s, "error": generation.error,
            }
            out[id(pending)] = text
        return out

    def _truncate_obs(self, text: str) -> str:
        # Search-R1 cuts the observation's token ids at max_obs_length; we cut the passages so the tags stay closed.
        if self.backend.count_tokens(text) <= self.config.max_obs_tokens:
            return text
        return self.backend.truncate_tokens(text, self.config.max_obs_tokens)

    def _append(self, rollout: Rollout, observation: str) -> None:
        rollout.response += observation
        rollout.segments.append((observation, False))
        rollout.context_tokens += self.backend.count_tokens(observation)

    def _start_all(self, items: Sequence[tuple[str, str]]) -> list[Rollout]:
        """Start every rollout, with the methods' initial queries (if any) retrieved in one call."""
        wanted = [self.method.initial_queries(question) for _, question in items]
        outcomes = iter(self._search_each([queries for queries in wanted if queries]))
        return [self.start(key, question, next(outcomes) if queries else None) for (key, question), queries in zip(items, wanted)]

    def _search_each(self, searches: list[list[str]]) -> list[SearchOutcome]:
        """Every search's hits from one retrieval call; when the server rejects that call, each search on its own,
        so that a rejected query (over-long, malformed) fails only the example that made it."""
        flat = [q for queries in searches for q in queries]
        if not flat:
            return [[] for _ in searches]
        try:
            results = self._search(flat)
        except RequestRejected as exc:
            if len(searches) == 1:
                return [exc]
            alone = [self._search_each([queries])[0] for queries in searches]
            if all(isinstance(outcome, RequestRejected) for outcome in alone):
                # Every search refused on its own: the request's settings are wrong (e.g. topk), not a query.
                first = alone[0].message
                raise RetrievalUnavailable(f"the retrieval server rejected every search of the batch, each on its own ({first}): check --topk against the server's limits", hint="fix the setting, then rerun with --resume") from None
            return alone
        outcomes: list[SearchOutcome] = []
        position = 0
        for queries in searches:
            outcomes.append(results[position : position + len(queries)])
            position += len(queries)
        return outcomes

    def _search(self, queries: list[str]) -> list[list[HitLike]]:
        """One retrieval call. The retriever retries transient failures itself, within its deadline; wrapping it in
        a second retry loop here would multiply the worst-case wait."""
        if self.retriever is None:
            raise EvalsuiteError("the model searched but no retriever is configured", hint="pass --retriever INDEX_DIR or URL")
        hint = "check the retrieval server, then rerun with --resume (finished examples are kept)"
        try:
            results = self.retriever.search(queries, self.config.topk)
        except RequestRejected:
            raise
        except EvalsuiteError as exc:
            raise RetrievalUnavailable(f"retrieval failed: {exc.message}", hint=hint) from None
        except Exception as exc:  # a retriever without its own error type (connection refused, ...)
            raise RetrievalUnavailable(f"retrieval failed: {describe(exc)}", hint=hint) from None
        if len(results) != len(queries):
            raise RetrievalUnavailable(f"retriever returned {len(results)} result lists for {len(queries)} queries", hint=hint)
        return results


def _rejected(queries: list[str], exc: RequestRejected) -> str:
    shown = "; ".join(q if len(q) <= 80 else f"{q[:80]}... ({len(q)} characters)" for q in queries)
    return f"the retrieval server rejected the search [{shown}]: {exc.message}"
