"""Search-P1's offline reference plans (seeds/002 §3 "Reference planner generation", App. B.1), cached as JSONL.

Per training question: sample trajectories with the planner model, keep the correct ones, and take as essential steps
the queries that a majority of the correct trajectories share (matched lexically, order of the first trajectory).
Questions without a correct trajectory fall back to the row's gold decomposition (AD-QA, MuSiQue) when it has one.
The file (`{"id": "task:id", "plan", "source"}` per line) is read back through `reference_plans:` in the recipe config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalsuite.training.config import TrainConfig
from evalsuite.training.data import QueryColumn


# The `reference_plan` of each training row, from the files the config's `reference_plans` names (Search-P1's and
# SmartSearch's configs have it), else the row's gold decomposition.
REFERENCE_PLANS = QueryColumn("reference_plan", "reference_plans", "plan")


def essential_steps(trajectories: list[list[str]], threshold: float = 0.5) -> list[str]:
    """Queries of the first trajectory that at least half of all trajectories contain (token Jaccard ≥ threshold)."""
    from evalsuite.rewards.matching import token_jaccard

    if not trajectories:
        return []
    steps: list[str] = []
    for query in trajectories[0]:
        shared = sum(1 for queries in trajectories if any(token_jaccard(query, q) >= threshold for q in queries))
        if shared * 2 >= len(trajectories) and not any(token_jaccard(query, s) >= threshold for s in steps):
            steps.append(query)
    return steps


def build_plans(
    config: TrainConfig,
    method: Any,
    out: Path,
    samples: int,
    planner_backend: str = "hf",
    planner_model: str | None = None,
) -> dict[str, Any]:
    """Write the plans of every training row of `config` to `out`; returns counts per source. The planner is any
    evalsuite backend (the paper uses a large instruct model, HY 2.0-Instruct; by default the recipe's own model)
    playing `method` (Search-P1's protocol)."""
    from evalsuite.agent.engine import RolloutEngine
    from evalsuite.metrics.answer import exact_match
    from evalsuite.models.registry import load_backend
    from evalsuite.rewards.base import samples as as_samples
    from evalsuite.training.data import training_rows
    from evalsuite.training.model import resolve_model
    from evalsuite.training.rollout import load_retriever

    rows = training_rows(config, [REFERENCE_PLANS])
    backend = load_backend(planner_backend, planner_model or resolve_model(config.model))
    style = method.resolve_style(config.prompt_style, backend.has_chat_template())
    rollout_config = config.rollout_config()
    engine = RolloutEngine(
        backend,
        method,
        load_retriever(config.retriever),
        type(rollout_config)(**{**rollout_config.__dict__, "temperature": 1.0}),
        style,
    )
    rollouts = engine.run([(f"{i}#{k}", r["question"]) for i, r in enumerate(rows) for k in range(samples)])
    counts = {"rows": len(rows), "from_trajectories": 0, "from_decomposition": 0, "empty": 0}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for i, row in enumerate(rows):
            mine = [r for r in rollouts if r.key.startswith(f"{i}#")]
            correct = [r for r in mine if r.prediction is not None and exact_match(r.prediction, row["golden_answers"])]
            queries = [
                as_samples([r.response], {"golden_answers": [row["golden_answers"]], "turns": [r.turns]})[0].queries
                for r in correct
            ]
            plan, source = essential_steps(queries), "trajectories"
            if not plan:
                plan, source = list(row["reference_plan"]), "decomposition"
            if not plan:
                source = "none"
            counts[
                {"trajectories": "from_trajectories", "decomposition": "from_decomposition", "none": "empty"}[source]
            ] += 1
            handle.write(
                json.dumps({"id": row["id"], "plan": plan, "source": source, "correct_trajectories": len(correct)})
                + "\n"
            )
    return counts
