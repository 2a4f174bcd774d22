"""Per-example scoring shared by `evalsuite run`, `evalsuite score` and leaderboard verification.

Which metrics an example gets and how its answers are normalized is its task's choice
(`Task.scored_metrics`: the default metrics plus the task's own, or its own instead of them;
`Task.normalization`, else SQuAD's); each metric is computed by its registered function
(evalsuite.metrics.registry), so a new metric or a task with its own never edits this file.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.answer import retrieval_hit
from evalsuite.metrics.registry import MetricInput, default_metrics, get_metric, get_normalizer
from evalsuite.runs.schema import ExampleRecord, Turn
from evalsuite.tasks.registry import Task, get_task


def passage_text(title: str | None, text: str) -> str:
    """The text a retrieval hit is judged on: title and body, as the model saw them."""
    return f"{title} {text}" if title else text


def _task(name: str) -> Task | None:
    try:
        return get_task(name)
    except EvalsuiteError:
        return None  # a record of a task this registry does not know is scored with the standard metrics


def task_metrics(task_name: str) -> tuple[str, ...]:
    """The metrics a task's examples are scored with: the task's own choice, else every default metric."""
    return _metrics_of(_task(task_name))


def _metrics_of(task: Task | None) -> tuple[str, ...]:
    return task.scored_metrics() if task is not None else default_metrics()


def metric_input(record: ExampleRecord, task: Task | None = None) -> MetricInput:
    """What the metrics see of a record, under its task's answer normalization."""
    task = task or _task(record.task)
    passages = [passage_text(p.title, p.text) for turn in record.turns for p in turn.passages]
    return MetricInput(
        record.prediction,
        record.golden_answers,
        passages,
        record.turns,
        get_normalizer(task.normalization if task is not None else "squad"),
        record,
    )


def behaviour_metrics(turns: Sequence[Turn], prediction: str | None) -> dict[str, float]:
    """Searches (sub-queries count one each), turns, invalid actions and whether an answer tag was given, from turns
    alone (as the rollout loop has them before a record exists)."""
    example = MetricInput(prediction, (), (), turns)
    return {
        name: float(get_metric(name).compute(example)) for name in ("n_searches", "n_turns", "n_invalid", "has_answer")
    }


def score_record(record: ExampleRecord, metrics: Sequence[str] | None = None) -> dict[str, float]:
    """The rule-based metrics of one example, from its prediction, gold answers and turns: `metrics` when given,
    else its task's. A failed example scores 0 on every metric whatever its prediction or turns say: a record
    marked failed is not an answer (and a forger could otherwise fill one with the gold answer)."""
    task = _task(record.task)
    if record.status == "failed":
        scores = dict.fromkeys(metrics or _metrics_of(task), 0.0)
        if "stop_error" in scores:  # how it ended, not a score: a failed example is the one that ended in an error
            scores["stop_error"] = 1.0
        return scores
    example = metric_input(record, task)
    return {name: float(get_metric(name).compute(example)) for name in (metrics or _metrics_of(task))}


def score_imported(
    record: ExampleRecord,
    retrieved: Sequence[str] | None,
    retrieval_recorded: bool,
    metrics: Sequence[str] | None = None,
) -> dict[str, float]:
    """`score_record` of an imported result: its retrieval hit is judged on the passages the writer recorded outside
    the trajectory too (FlashRAG's `retrieval_result`), and is not computed at all (left out, shown as not recorded,
    never 0) where the file records no retrieval (`retrieval_recorded` False: no trajectory of searches and no
    retrieved passages)."""
    scores = score_record(record, metrics)
    if "retrieval_hit" not in scores or record.status == "failed":
        return scores
    if retrieved is not None:
        example = metric_input(record)
        scores["retrieval_hit"] = retrieval_hit(
            [*example.passages, *retrieved], record.golden_answers, example.normalize
        )
    elif not retrieval_recorded:
        del scores["retrieval_hit"]
    return scores
