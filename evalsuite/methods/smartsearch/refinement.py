"""SmartSearch's query refinement (seeds/004, "Query Refinement Engine" and Stage 3): find the low-quality queries of a
trajectory, rewrite each with its textual feedback, and regenerate the trajectory from the rewritten query on.

A query is low-quality when its process score is 0: not novel (too many of its documents were already retrieved) or,
where a usefulness judge ran, not useful. The paper's refiner is a small fine-tuned student model; ours is any
evalsuite backend (`refiner: {backend: llamacpp, model: FILE.gguf}`, an OpenAI-compatible endpoint, ...) or the policy
itself (`refiner: policy`, the default, which needs no second model). The rewritten query is kept as the policy's
own turn text (trained, env_mask 1): the paper trains on refined trajectories so that the policy learns to write them.

During GRPO (`expand_groups`) each group of `num_generations` rollouts of one question has `slots` of its places
filled by refined branches of the others, with at most `max_shared_prefix` trajectories (the source included) sharing
one source's prefix, so refinement adds alternatives without collapsing the group onto one path. Places no weak query
can fill are filled by fresh rollouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalsuite.agent.engine import Rollout, RolloutEngine
from evalsuite.agent.tag_method import render
from evalsuite.protocol.tags import TagPair, first_block
from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import Backend, GenerationRequest
from evalsuite.runs.schema import Turn
from evalsuite.training.rollout import RolloutExtension, TokenizedRollout

FILLER_SEED_OFFSET = 1_000_003
SEARCH = TagPair.xml("search")
QUERY = TagPair.xml("query")
REFINE_SYSTEM = (
    "You improve the search queries of a search agent. You are given the user's question, the queries the agent has "
    "already issued, one weak query and why it is weak. Write one better search query for the same step: specific, "
    "about information not yet retrieved, and aimed at what the question needs next. Answer only with the query "
    "between <query> and </query>."
)


@dataclass(frozen=True)
class WeakQuery:
    """A low-quality search turn of a rollout: where it is, its query and the feedback that explains why."""

    turn_position: int
    query: str
    feedback: str


def query_feedback(turn: Turn) -> str:
    """The evaluator's verdicts on one search turn as text (the paper concatenates the explanations)."""
    parts = []
    if turn.extra.get("novelty") == 0:
        parts.append(
            f"Not novel: {turn.extra.get('doc_overlap', '?')} of its retrieved "
            "documents had already been retrieved by earlier searches."
        )
    if turn.extra.get("usefulness") == 0:
        explanation = turn.extra.get("usefulness_explanation") or "its results do not address what the search was for"
        parts.append(f"Not useful: {explanation}")
    return " ".join(parts)


def weak_queries(rollout: Rollout) -> list[WeakQuery]:
    """The rollout's searched turns whose query scored 0 (novelty 0, or usefulness 0 where judged), in order."""
    out = []
    for position, turn in enumerate(rollout.turns):
        if turn.query is None or "novelty" not in turn.extra or turn.extra.get("initial_retrieval"):
            continue  # unsearched (e.g. the final turn) or not a SmartSearch turn
        if turn.extra["novelty"] == 0 or turn.extra.get("usefulness") == 0:
            out.append(WeakQuery(position, turn.query, query_feedback(turn)))
    return out


def replace_query(text: str, query: str) -> str:
    """The turn's text up to its `<search>` block, then the refined query in that block (what follows is dropped)."""
    block = first_block(text, (SEARCH,))
    if block is None:
        raise EvalsuiteError("a refined turn must contain a <search> block")
    return f"{text[: block.start]}{SEARCH.open} {query} {SEARCH.close}"


def parse_refined(text: str) -> str | None:
    """The refiner's query: the first `<query>` block, else its first non-empty line; None when empty."""
    block = first_block(text, (QUERY,))
    candidate = block.content if block is not None else next((line for line in text.splitlines() if line.strip()), "")
    candidate = " ".join(candidate.replace(QUERY.open, " ").replace(QUERY.close, " ").split())
    return candidate or None


class ModelRefiner:
    """Rewrites weak queries with a backend model, in one batched call; returns None where it produced no new query."""

    def __init__(self, backend: Backend, style: str, max_tokens: int = 32, temperature: float = 0.0, seed: int = 0):
        self.backend, self.style = backend, style
        self.max_tokens, self.temperature, self.seed = max_tokens, temperature, seed

    def prompt(self, question: str, history: Sequence[Turn], weak: WeakQuery) -> str:
        earlier = [t.query for t in history if t.query is not None]
        listed = "\n".join(f"- {q}" for q in earlier) or "(none)"
        user = (
            f"Question: {question}\nEarlier queries:\n{listed}\nWeak query: {weak.query}\nFeedback: {weak.feedback}\n"
        )
        messages = [{"role": "system", "content": REFINE_SYSTEM}, {"role": "user", "content": user}]
        return render(messages, self.style, self.backend.chat_template, "smartsearch-refine") + (
            "" if self.style == "instruct" else f"\n\n{QUERY.open}"
        )

    def __call__(self, items: Sequence[tuple[Rollout, WeakQuery]]) -> list[str | None]:
        if not items:
            return []
        requests = [
            GenerationRequest(
                prompt=self.prompt(r.question, r.turns[: w.turn_position], w),
                stop=[QUERY.close],
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed,
            )
            for r, w in items
        ]
        out = []
        for (_, weak), generation in zip(items, self.backend.generate(requests)):
            refined = parse_refined(generation.text) if generation.error is None else None
            out.append(refined if refined and refined.lower() != weak.query.lower() else None)
        return out


def load_refiner(
    spec: Any, policy_backend: Backend, style: str, max_tokens: int, temperature: float, seed: int
) -> ModelRefiner:
    """`policy` → the live policy; a mapping `{backend, model, ...options}` → that evalsuite backend."""
    if spec == "policy":
        return ModelRefiner(policy_backend, style, max_tokens, temperature, seed)
    if not isinstance(spec, dict) or "backend" not in spec or "model" not in spec:
        raise EvalsuiteError(f"refine.refiner must be 'policy' or a mapping with backend and model, got {spec!r}")
    from evalsuite.models.registry import load_backend

    options = {k: v for k, v in spec.items() if k not in ("backend", "model", "style")}
    backend = load_backend(spec["backend"], spec["model"], **options)
    refiner_style = spec.get("style") or ("instruct" if backend.has_chat_template() else "base")
    return ModelRefiner(backend, refiner_style, max_tokens, temperature, seed)


def refine(
    engine: RolloutEngine, refiner: ModelRefiner, wanted: Sequence[tuple[Rollout, WeakQuery]], keys: Sequence[str]
) -> list[Rollout | None]:
    """For each (source, weak query): the refined branch played
    to completion, or None where the refiner gave nothing."""
    queries = refiner(wanted)
    forks: list[Rollout | None] = []
    for (source, weak), query, key in zip(wanted, queries, keys):
        if query is None:
            forks.append(None)
            continue
        text = replace_query(source.turns[weak.turn_position].text, query)
        extra = {"refined_from": weak.query, "refine_feedback": weak.feedback}
        forks.append(engine.fork(source, weak.turn_position, text, key, extra))
    engine.finish([f for f in forks if f is not None])
    return forks


def pick_branches(group: Sequence[Rollout], slots: int, max_shared_prefix: int) -> list[tuple[Rollout, WeakQuery]]:
    """Up to `slots` (source, weak query) pairs: sources in turn, earliest weak query first, at most
    `max_shared_prefix − 1` branches per source (so at most `max_shared_prefix` trajectories share its prefix)."""
    per_source = max(0, max_shared_prefix - 1)
    candidates = [list(weak_queries(r))[:per_source] for r in group]
    picked: list[tuple[Rollout, WeakQuery]] = []
    depth = 0
    while len(picked) < slots and any(depth < len(c) for c in candidates):
        for rollout, weak in zip(group, candidates):
            if depth < len(weak) and len(picked) < slots:
                picked.append((rollout, weak[depth]))
        depth += 1
    return picked


def expand_groups(
    engine: RolloutEngine, refiner: ModelRefiner, groups: Sequence[tuple[str, int]], slots: int, max_shared_prefix: int
) -> list[list[Rollout]]:
    """Rollouts for each (question, size) group: `size − slots`
    fresh ones, then refined branches, then fresh fillers."""
    fresh_counts = [size - min(slots, size - 1) for _, size in groups]
    items = [
        (f"g{g}f{k}", question)
        for g, ((question, _), count) in enumerate(zip(groups, fresh_counts))
        for k in range(count)
    ]
    fresh = engine.run(items)
    out: list[list[Rollout]] = []
    position = 0
    wanted: list[tuple[Rollout, WeakQuery]] = []
    owner: list[int] = []
    for g, ((_, size), count) in enumerate(zip(groups, fresh_counts)):
        group = fresh[position : position + count]
        position += count
        out.append(list(group))
        for pair in pick_branches(group, size - count, max_shared_prefix):
            wanted.append(pair)
            owner.append(g)
    branches = refine(engine, refiner, wanted, [f"g{g}r{i}" for i, g in enumerate(owner)])
    for g, branch in zip(owner, branches):
        if branch is not None:
            out[g].append(branch)
    fillers = [(f"g{g}x{k}", question) for g, (question, size) in enumerate(groups) for k in range(size - len(out[g]))]
    if fillers:
        # another seed: the same batch layout under the fresh rollouts' seed would sample them again, identically
        reseeded = RolloutEngine(
            engine.backend,
            engine.method,
            engine.retriever,
            replace(engine.config, seed=engine.config.seed + FILLER_SEED_OFFSET),
            engine.style,
        )
        extra = reseeded.run(fillers)
        position = 0
        for g, (_, size) in enumerate(groups):
            need = size - len(out[g])
            out[g].extend(extra[position : position + need])
            position += need
    return out


class RefinedRollouts(RolloutExtension):
    """SmartSearch stage 3 in the shared rollout function: each run of identical prompts (TRL's group of
    `num_generations`) gets `spec.slots` refined branches (`expand_groups`), and the `refined` column says which
    rollouts are branches. `spec`: the recipe's `RefineSpec` (refiner, slots, max_shared_prefix, max_tokens)."""

    def __init__(self, spec: Any):
        self.spec = spec
        self._refiner: Any = None  # a second refiner model, loaded once

    def play(self, engine: RolloutEngine, questions: list[str]) -> list[Rollout]:
        from itertools import groupby

        spec = self.spec
        groups = [(question, len(list(run))) for question, run in groupby(questions)]
        if spec.refiner == "policy":
            style = "instruct" if engine.backend.has_chat_template() else "base"
            refiner = load_refiner(
                "policy", engine.backend, style, spec.max_tokens, engine.config.temperature, engine.config.seed
            )
        else:
            if self._refiner is None:
                self._refiner = load_refiner(spec.refiner, engine.backend, "base", spec.max_tokens, 0.0, 0)
            refiner = self._refiner
        return [
            rollout
            for group in expand_groups(engine, refiner, groups, spec.slots, spec.max_shared_prefix)
            for rollout in group
        ]

    def columns(
        self, engine: RolloutEngine, rollouts: list[Rollout], tokenized: list[TokenizedRollout], tokenizer: Any
    ) -> dict[str, list[Any]]:
        return {"refined": [int(any("refined_from" in t.extra for t in rollout.turns)) for rollout in rollouts]}
