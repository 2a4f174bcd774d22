"""The rollout loop (docs/agent.md): one trajectory's turns written once, played on one of two schedules.

`_turn` is one turn of one trajectory as a generator that yields what it needs (a generation, a search) and gets the
answer sent back. The turn-synchronous schedule (`run`, `finish`, `step`) advances every trajectory of a batch in
lockstep, so each round is one batched backend call and one retrieval call: the reference, and the only schedule
for in-process batch backends. The asynchronous schedule (`run_async`) lets each trajectory advance on its own
against a backend that batches continuously (`Backend.supports_async`), with at most `max_in_flight` trajectories
at once; the searches of concurrent trajectories are collected for a short window and sent as one retrieval call
(`SearchBatcher`). Both send the same requests, so a backend whose greedy text depends only on the prompt gives
byte-identical trajectories under either.

Search-R1's `run_llm_loop`: up to `max_turns` turns in which a search gets an observation and a turn with no valid
action gets the fixed invalid-action message, then one final turn with search disabled for whoever has not answered.
Budgets (per-turn `max_tokens`, `max_obs_tokens`, total `max_context_tokens`) cut models that loop or flood the
context; nothing here raises on model text. The prediction is the method's answer read from the model's own text
(`model_text`), never from an observation or the invalid-action message.

Failures: a failed generation fails its example; a search the retrieval server rejects (4xx, e.g. an over-long
query) fails the example that made it, and the batch goes on; a retriever that stays unreachable after its own
retries (see `evalsuite.retry`; the engine adds none) raises `RetrievalUnavailable`, which stops the run with every
finished example kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalsuite.agent.method import Action, HitLike, Method
from evalsuite.errors import EvalsuiteError, RequestRejected
from evalsuite.models.base import (
    Backend,
    Generation,
    GenerationRequest,
    ScheduleUnsupported,
)
from evalsuite.protocol.passages import hit_passage
from evalsuite.retry import describe
from evalsuite.runs.schema import Turn


class Retriever(Protocol):
    def search(self, queries: list[str], k: int) -> list[list[HitLike]]: ...


class RetrievalUnavailable(EvalsuiteError):
    """The retriever kept failing after its retries; the run stops with everything finished kept."""


# Per search: its hits per query, or the server's refusal of it.
SearchOutcome = list[list[HitLike]] | RequestRejected


# Like other settings records (JudgeUsage, RetryPolicy) this is a list of typed fields; they share a shape, not logic.
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
    top_p: float | None = None  # None: the backend's own default

    def decoding(self) -> dict[str, Any]:
        decoding: dict[str, Any] = {
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "max_obs_tokens": self.max_obs_tokens,
            "max_context_tokens": self.max_context_tokens,
        }
        if self.top_p is not None:  # recorded only when set, so runs made before --top-p existed still resume
            decoding["top_p"] = self.top_p
        return decoding


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
    # the seed this trajectory samples with (None: the engine's RolloutConfig.seed); a sampled run gives each of a
    # question's K trajectories its own, so they share one batch (and one `n` request where the backend has it)
    seed: int | None = None

    @property
    def done(self) -> bool:
        return self.stop_reason is not None


@dataclass
class _Pending:
    rollout: Rollout
    turn: Turn
    action: Action


@dataclass(frozen=True)
class NeedGeneration:
    """A turn program waits for this generation (sent back as a `Generation`)."""

    request: GenerationRequest


@dataclass(frozen=True)
class NeedSearch:
    """A turn program waits for these queries' hits (sent back as a `SearchOutcome`)."""

    queries: list[str]


Need = NeedGeneration | NeedSearch
# One turn of one trajectory: yields what it needs, is sent the answer, returns when the turn is recorded.
TurnProgram = Generator[Need, Any, None]


def _advance(program: TurnProgram, answer: Any) -> Need | None:
    """Send `answer` to `program`; its next need, or None when it has finished."""
    try:
        return program.send(answer)
    except StopIteration:
        return None


def model_turns(rollout: Rollout) -> int:
    """Turns the model has taken (retrieval before the first model turn is not one): the next turn's index."""
    return sum(1 for t in rollout.turns if not t.extra.get("initial_retrieval"))


def model_text(rollout: Rollout) -> str:
    """The model's own text: its generated segments joined, observations and invalid-action messages left out.

    The answer is read from this, never from the whole response: Search-R1's invalid-action message says "…between
    <answer> and </answer>", so over the whole response a rollout that never answered would predict "and". (Recorded
    files of other tools are read on their own convention: `Method.parse` over the whole response.)"""
    return "".join(text for text, by_model in rollout.segments if by_model)


class SearchBatcher:
    """The asynchronous schedule's retrieval: searches that arrive within `window_s` of each other go out as one
    retrieval call (run in a worker thread, one call at a time; searches arriving meanwhile form the next batch),
    so the retrieval server still sees batches when every trajectory advances on its own."""

    def __init__(self, search_each: Callable[[list[list[str]]], list[SearchOutcome]], window_s: float):
        self._search_each = search_each
        self.window_s = window_s
        self._waiting: list[tuple[list[str], asyncio.Future[SearchOutcome]]] = []
        self._sender: asyncio.Task[None] | None = None
        self.batch_sizes: list[int] = []  # searches per retrieval call, for benchmarks and tests

    async def search(self, queries: list[str]) -> SearchOutcome:
        future: asyncio.Future[SearchOutcome] = asyncio.get_running_loop().create_future()
        self._waiting.append((queries, future))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send())
        return await future

    async def _send(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.window_s)
            batch, self._waiting = self._waiting, []
            self.batch_sizes.append(len(batch))
            outcomes: list[SearchOutcome | Exception]
            try:
                outcomes = list(await asyncio.to_thread(self._search_each, [queries for queries, _ in batch]))
            except Exception as exc:  # RetrievalUnavailable: every search of the batch gets it
                outcomes = [exc] * len(batch)
            for (_, future), outcome in zip(batch, outcomes):
                if future.done():
                    continue  # its trajectory was cancelled
                if isinstance(outcome, Exception) and not isinstance(outcome, RequestRejected):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)

    async def close(self) -> None:
        if self._sender is not None and not self._sender.done():
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)


class RolloutEngine:
    """Runs a method's protocol with a backend and a retriever over batches of questions."""

    def __init__(
        self,
        backend: Backend,
        method: Method,
        retriever: Retriever | None,
        config: RolloutConfig,
        style: str,
        search_window_s: float = 0.005,
        on_generated: Callable[[int], None] | None = None,
    ):
        self.backend = backend
        self.on_generated = on_generated  # told the tokens of each generation call, as progress while it runs
        self.method = method
        self.retriever = retriever
        self.config = config
        self.style = style
        self.search_window_s = search_window_s  # the asynchronous schedule's collection window for searches

    def start(self, key: str, question: str, initial: SearchOutcome | None = None, seed: int | None = None) -> Rollout:
        """A fresh rollout with its prompt built and counted (`initial`: hits of the method's initial queries; `seed`:
        its own sampling seed, None for the engine's).

        When the retrieval server rejects the initial queries, the rollout comes back failed with the reason."""
        queries = self.method.initial_queries(question)
        if queries and initial is None:
            (initial,) = self._search_each([queries])
        if isinstance(initial, RequestRejected):
            prompt = self.method.prompt(question, self.style, self.backend.chat_template)
            return Rollout(
                key=key,
                question=question,
                prompt=prompt,
                stop_reason="error",
                error=_rejected(queries, initial),
                seed=seed,
            )
        if not queries or initial is None:  # (None only without queries: they were searched just above)
            prompt = self.method.prompt(question, self.style, self.backend.chat_template)
        else:
            prompt = self.method.prompt_with_passages(
                question, self.style, self.backend.chat_template, initial, self._truncate_obs
            )
        tokens = self.backend.count_tokens(prompt)
        rollout = Rollout(
            key=key, question=question, prompt=prompt, prompt_tokens=tokens, context_tokens=tokens, seed=seed
        )
        if queries and initial is not None:
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

    # --- the turn-synchronous schedule ---------------------------------------------------------------------------

    def run(
        self,
        items: Sequence[tuple[str, str]],
        on_finished: Callable[[int, Rollout], None] | None = None,
        seeds: Sequence[int] | None = None,
    ) -> list[Rollout]:
        """Roll out every (key, question) pair to completion; returns them in input order. `on_finished(index,
        rollout)` is called as each one finishes (after the turn that ends it), not once the whole batch is done.
        `seeds`: each item's own sampling seed (default: the engine's for all)."""
        return self.finish(self._start_all(items, seeds), on_finished)

    def finish(
        self, rollouts: list[Rollout], on_finished: Callable[[int, Rollout], None] | None = None
    ) -> list[Rollout]:
        """Play every unfinished rollout on from the turn it has reached (forks resume mid-way) and extract answers;
        each rollout's answer is extracted, and `on_finished` told, after the turn that finishes it."""
        reported: set[int] = set()

        def report_finished() -> None:
            for index, rollout in enumerate(rollouts):
                if rollout.done and index not in reported:
                    reported.add(index)
                    rollout.prediction = self.method.extract_answer(model_text(rollout))
                    if on_finished is not None:
                        on_finished(index, rollout)

        report_finished()  # rollouts that failed at their start (a rejected initial search) are finished already
        while active := [r for r in rollouts if not r.done]:
            by_turn: dict[int, list[Rollout]] = {}
            for rollout in active:
                by_turn.setdefault(model_turns(rollout), []).append(rollout)
            for turn_index, group in sorted(by_turn.items()):
                self.step(group, turn_index, final=turn_index >= self.config.max_turns)
                report_finished()
        return rollouts

    def fork(
        self, source: Rollout, turn_position: int, text: str, key: str, extra: dict[str, Any] | None = None
    ) -> Rollout:
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
            key=key,
            question=source.question,
            prompt=source.prompt,
            prompt_tokens=source.prompt_tokens,
            response=response,
            context_tokens=source.prompt_tokens + (self.backend.count_tokens(response) if response else 0),
            turns=[t.model_copy(deep=True) for t in kept],
            segments=list(segments),
            seed=source.seed,
        )
        generation = Generation(text=text, completion_tokens=self.backend.count_tokens(text), finish_reason="stop")
        self._lockstep(
            [
                self._after_generation(
                    fork, generation, final=kept_model_turns >= self.config.max_turns, extra=extra or {}
                )
            ]
        )
        return fork

    def step(self, active: list[Rollout], turn_index: int, final: bool) -> None:
        """One turn for all active rollouts: a batched generation, then one retrieval call for all searches."""
        self._lockstep([self._turn(rollout, turn_index, final) for rollout in active])

    def _lockstep(self, programs: list[TurnProgram]) -> None:
        """Advance `programs` together: each round answers all their generations in one backend call and all their
        searches in one retrieval call."""
        waiting = [(program, need) for program in programs if (need := _advance(program, None)) is not None]
        while waiting:
            generating = [(program, need) for program, need in waiting if isinstance(need, NeedGeneration)]
            searching = [(program, need) for program, need in waiting if isinstance(need, NeedSearch)]
            answered: list[tuple[TurnProgram, Any]] = []
            if generating:
                generations = self._generate([need.request for _, need in generating])
                answered += [(program, generation) for (program, _), generation in zip(generating, generations)]
            if searching:
                outcomes = self._search_each([need.queries for _, need in searching])
                answered += [(program, outcome) for (program, _), outcome in zip(searching, outcomes)]
            waiting = [
                (program, need) for program, answer in answered if (need := _advance(program, answer)) is not None
            ]

    # --- the asynchronous schedule -------------------------------------------------------------------------------

    async def run_async(
        self,
        items: Sequence[tuple[str, str]],
        max_in_flight: int = 64,
        on_finished: Callable[[int, Rollout], None] | None = None,
        seeds: Sequence[int] | None = None,
    ) -> list[Rollout]:
        """Roll out every (key, question) pair, each trajectory on its own, at most `max_in_flight` at
        once, against a backend with `supports_async`; `on_finished(index, rollout)` is called as each
        one finishes (`seeds` as for `run`). Returns them in input order. `RetrievalUnavailable` cancels
        the trajectories in flight and is raised; finished ones were already handed to `on_finished`."""
        if not self.backend.supports_async:
            raise ScheduleUnsupported(self.backend.name)
        if max_in_flight < 1:
            raise EvalsuiteError(
                f"max_in_flight {max_in_flight} is out of range", hint="allow at least one trajectory in flight"
            )
        batcher = SearchBatcher(self._search_each, self.search_window_s)
        results: list[Rollout | None] = [None] * len(items)
        queue = iter(enumerate(zip(items, _each_seed(items, seeds))))

        async def worker() -> None:
            for index, (
                (key, question),
                seed,
            ) in queue:  # the workers share one iterator: examples start in input order
                results[index] = rollout = await self._play(key, question, batcher, seed)
                if on_finished is not None:
                    on_finished(index, rollout)

        workers = [asyncio.create_task(worker()) for _ in range(min(max_in_flight, len(items)))]
        try:
            if workers:
                done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
                failed = next((task.exception() for task in done if task.exception() is not None), None)
                if failed is not None:
                    raise failed
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await batcher.close()
            await self.backend.aclose()
        return [rollout for rollout in results if rollout is not None]

    async def _play(self, key: str, question: str, batcher: SearchBatcher, seed: int | None = None) -> Rollout:
        """One trajectory from its question to its answer: generate, search, generate, ..., on its own."""
        queries = self.method.initial_queries(question)
        rollout = self.start(key, question, await batcher.search(queries) if queries else None, seed)
        while not rollout.done:
            turn_index = model_turns(rollout)
            program = self._turn(rollout, turn_index, final=turn_index >= self.config.max_turns)
            need = _advance(program, None)
            while need is not None:
                answer = await (
                    self._agenerate(need.request) if isinstance(need, NeedGeneration) else batcher.search(need.queries)
                )
                need = _advance(program, answer)
        rollout.prediction = self.method.extract_answer(model_text(rollout))
        return rollout

    # --- one turn of one trajectory, shared by both schedules ----------------------------------------------------

    def _turn(self, rollout: Rollout, turn_index: int, final: bool) -> TurnProgram:
        """Generate the turn within the budgets, then record it (`_after_generation`)."""
        budget = min(self.config.max_tokens, self.config.max_context_tokens - rollout.context_tokens)
        if budget <= 0:
            rollout.stop_reason = "context_budget"
            return
        request = GenerationRequest(
            prompt=rollout.prompt + rollout.response,
            stop=list(self.method.stop),
            max_tokens=budget,
            temperature=self.config.temperature,
            seed=self._seed(rollout),
            top_p=self.config.top_p,
            key=(rollout.key, turn_index),
        )
        generation = yield NeedGeneration(request)
        yield from self._after_generation(rollout, generation, final)

    def _after_generation(
        self, rollout: Rollout, generation: Generation, final: bool, extra: dict[str, Any] | None = None
    ) -> TurnProgram:
        """Record a generated turn; a search is made and its observation (condensed by the method's extra model
        call, if it has one) appended. `extra` goes into the new turn's `extra` before the search."""
        pending = self._take_turn(rollout, generation, final)
        if extra and generation.error is None:
            rollout.turns[-1].extra.update(extra)
        if pending is None:
            return
        started = time.perf_counter()
        hits = yield NeedSearch(pending.action.queries)
        pending.turn.retrieval_latency_s = time.perf_counter() - started
        if isinstance(hits, RequestRejected):
            rollout.error = _rejected(pending.action.queries, hits)
            rollout.stop_reason = "error"
            return
        pending.turn.passages = [hit_passage(hit) for per_query in hits for hit in per_query]
        self.method.annotate_search(rollout.question, rollout.turns[:-1], pending.turn)
        prompt = self.method.condense_prompt(
            rollout.question,
            rollout.response,
            pending.action,
            hits,
            self.style,
            self.backend.chat_template,
            self._truncate_obs,
        )
        if prompt is None:
            self._append(rollout, self.method.observation(pending.action, hits, self._truncate_obs))
            return
        # Search-o1's extra model call that condenses the documents; its text and cost go in Turn.extra.
        condensed = yield NeedGeneration(
            GenerationRequest(
                prompt=prompt,
                stop=[],
                max_tokens=self.config.max_obs_tokens,
                temperature=self.config.temperature,
                seed=self._seed(rollout),
                top_p=self.config.top_p,
                key=(rollout.key, -len(rollout.turns)),
            )
        )
        text = condensed.text if condensed.error is None else ""
        pending.turn.extra["condense"] = {
            "text": text,
            "prompt_tokens": condensed.prompt_tokens,
            "completion_tokens": condensed.completion_tokens,
            "latency_s": condensed.latency_s,
            "error": condensed.error,
        }
        self._append(rollout, self.method.condensed_observation(pending.action, text))

    def _take_turn(self, rollout: Rollout, generation: Generation, final: bool) -> _Pending | None:
        """Record one generated turn: an answer ends the rollout, a search is returned to be made, anything else
        gets the method's invalid-action message."""
        if generation.error is not None:
            rollout.error = generation.error
            rollout.stop_reason = "error"
            return None
        text = self.method.postprocess(generation.text)
        completion_tokens = (
            generation.completion_tokens
            if text == generation.text and generation.completion_tokens is not None
            else self.backend.count_tokens(text)
        )
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
            return _Pending(rollout, turn, action)
        else:
            turn.invalid_action = True
            self._append(rollout, self.method.invalid_observation())
        return None

    def _seed(self, rollout: Rollout) -> int:
        """The seed `rollout`'s requests sample with: its own, else the engine's."""
        return self.config.seed if rollout.seed is None else rollout.seed

    def _generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        start = time.perf_counter()
        try:
            generations = self.backend.generate(requests)
        except EvalsuiteError:
            raise
        except Exception as exc:  # a backend failure fails this batch's examples, not the run
            return [_failed_generation(exc) for _ in requests]
        if len(generations) != len(requests):
            raise EvalsuiteError(
                f"backend {self.backend.name} returned {len(generations)} generations for {len(requests)} prompts"
            )
        elapsed = time.perf_counter() - start
        for generation in generations:
            if not generation.latency_s:
                generation.latency_s = elapsed
        self._report_tokens(generations)
        return generations

    def _report_tokens(self, generations: list[Generation]) -> None:
        if self.on_generated is not None:
            self.on_generated(sum(g.completion_tokens or 0 for g in generations))

    async def _agenerate(self, request: GenerationRequest) -> Generation:
        start = time.perf_counter()
        try:
            generation = await self.backend.agenerate(request)
        except EvalsuiteError:
            raise
        except Exception as exc:  # a backend failure fails this example, not the run
            return _failed_generation(exc)
        if not generation.latency_s:
            generation.latency_s = time.perf_counter() - start
        self._report_tokens([generation])
        return generation

    def _truncate_obs(self, text: str) -> str:
        # Search-R1 cuts the observation's token ids at max_obs_length; we cut the passages so the tags stay closed.
        if self.backend.count_tokens(text) <= self.config.max_obs_tokens:
            return text
        return self.backend.truncate_tokens(text, self.config.max_obs_tokens)

    def _append(self, rollout: Rollout, observation: str) -> None:
        rollout.response += observation
        rollout.segments.append((observation, False))
        rollout.context_tokens += self.backend.count_tokens(observation)

    def _start_all(self, items: Sequence[tuple[str, str]], seeds: Sequence[int] | None = None) -> list[Rollout]:
        """Start every rollout, with the methods' initial queries (if any) retrieved in one call."""
        wanted = [self.method.initial_queries(question) for _, question in items]
        outcomes = iter(self._search_each([queries for queries in wanted if queries]))
        return [
            self.start(key, question, next(outcomes) if queries else None, seed)
            for (key, question), queries, seed in zip(items, wanted, _each_seed(items, seeds))
        ]

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
            rejected = [outcome for outcome in alone if isinstance(outcome, RequestRejected)]
            if len(rejected) == len(alone):
                # Every search refused on its own: the request's settings are wrong (e.g. topk), not a query.
                first = rejected[0].message
                raise RetrievalUnavailable(
                    "the retrieval server rejected every search of the batch, each "
                    f"on its own ({first}): check --topk against the server's limits",
                    hint="fix the setting, then rerun with --resume",
                ) from None
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
            raise EvalsuiteError(
                "the model searched but no retriever is configured", hint="pass --retriever INDEX_DIR or URL"
            )
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
            raise RetrievalUnavailable(
                f"retriever returned {len(results)} result lists for {len(queries)} queries", hint=hint
            )
        return results


def _each_seed(items: Sequence[Any], seeds: Sequence[int] | None) -> list[int | None]:
    """Each item's own seed, or None (the engine's) for all."""
    if seeds is None:
        return [None] * len(items)
    if len(seeds) != len(items):
        raise ValueError(f"{len(seeds)} seeds for {len(items)} items")
    return list(seeds)


def _failed_generation(exc: Exception) -> Generation:
    return Generation(text="", finish_reason="error", error=f"{type(exc).__name__}: {exc}")


def _rejected(queries: list[str], exc: RequestRejected) -> str:
    shown = "; ".join(q if len(q) <= 80 else f"{q[:80]}... ({len(q)} characters)" for q in queries)
    return f"the retrieval server rejected the search [{shown}]: {exc.message}"
