"""Termination and cost of a rollout, as the newer agents' evaluations report them: why it stopped, and the tokens
it took (searches per question are `n_searches`).

Not default metrics: they read what only `evalsuite run` records (the stop reason, the token counts of each turn),
so they are scored on run records (`RUN_METRICS`, evalsuite.agent.runner) and never on imported trajectories, which
lack them. A record scored without its record (bare answers) scores 0.
"""

from __future__ import annotations

from evalsuite.metrics.registry import MetricInput, MetricSpec, register_metric

# How a rollout can end (evalsuite.agent.engine): an answer, out of turns, out of the token budget, or an error.
STOP_REASONS = {
    "stop_answer": ("answer",),
    "stop_max_turns": ("max_turns",),
    "stop_max_tokens": ("context_budget",),
    "stop_error": ("error",),
}


def _stopped(reasons: tuple[str, ...]):
    def stopped(example: MetricInput) -> float:
        record = example.record
        if record is None:
            return 0.0
        failed = getattr(record, "status", "ok") == "failed"
        return float(getattr(record, "stop_reason", None) in reasons or ("error" in reasons and failed))

    return stopped


def _tokens(field: str):
    def tokens(example: MetricInput) -> float:
        return float(sum(getattr(turn, field, None) or 0 for turn in example.turns))

    return tokens


TERMINATION_METRICS: tuple[MetricSpec, ...] = (
    *(
        MetricSpec(
            name,
            f"stopped: {name.removeprefix('stop_').replace('_', ' ')}",
            "binary",
            _stopped(reasons),
            average="none",
            higher_is_better=name == "stop_answer",
            summary=False,
            default=False,
            over_samples=("avg",),  # how often; a stop reason is neither an answer (maj@K) nor a success (pass@k)
            description=f"the rollout ended with stop reason {' or '.join(reasons)}",
        )
        for name, reasons in STOP_REASONS.items()
    ),
    MetricSpec(
        "prompt_tokens",
        "prompt tokens",
        "count",
        _tokens("prompt_tokens"),
        higher_is_better=False,
        average="none",
        summary=False,
        default=False,
        description="prompt tokens over every model call of the rollout (its input cost)",
    ),
    MetricSpec(
        "completion_tokens",
        "completion tokens",
        "count",
        _tokens("completion_tokens"),
        higher_is_better=False,
        average="none",
        summary=False,
        default=False,
        description="tokens generated over the rollout",
    ),
)
RUN_METRICS = tuple(m.name for m in TERMINATION_METRICS)

for _spec in TERMINATION_METRICS:
    register_metric(_spec)
