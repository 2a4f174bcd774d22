"""Metrics an LLM judge panel decides rather than a function of the record: `acc_judge`, whether the prediction
answers the question given the gold answers (evalsuite.judges.accuracy, `evalsuite judge RUN --metrics accuracy`).

Declared here so that its kind drives the statistics like any other metric (0/1: Wilson and McNemar; a sampled
run's acc_judge_avg and acc_judge_pass@k per question), and so tables and paired tests can read it as a per-example
column (each judged answer's majority verdict, taken from judgments.jsonl by evalsuite.judges.evaluate). Never
scored from a record: not default, and asking the scorer for it is an error naming the command that makes it.
"""

from __future__ import annotations

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.registry import MetricInput, MetricSpec, register_metric


def _decided_by_judges(example: MetricInput) -> float:
    raise EvalsuiteError(
        "acc_judge is decided by an LLM judge panel, not computed from a record",
        hint="evalsuite judge RUN_DIR --panel PANEL.yaml --metrics accuracy",
    )


# The metrics a judge panel decides: verification never recomputes them (it has no panel), so a run's metrics.json
# may give them without recording them among the metrics it was scored with.
JUDGED_METRICS = ("acc_judge",)

# average "none": metrics.json's group rows and the leaderboard's tables hold only what every run is scored with.
ACC_JUDGE = register_metric(
    MetricSpec(
        "acc_judge",
        "judge accuracy",
        "binary",
        _decided_by_judges,
        average="none",
        summary=False,
        default=False,
        description="the judge panel's strict-majority verdict that the prediction answers the question (undecided: 0)",
    )
)
