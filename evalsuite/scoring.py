"""Per-example scoring shared by `evalsuite run` and `evalsuite score`: answer, retrieval and behaviour metrics."""

from __future__ import annotations

from evalsuite.metrics.answer import answer_metrics, retrieval_hit
from evalsuite.runs.schema import ExampleRecord, Turn


def passage_text(title: str | None, text: str) -> str:
    """The text a retrieval hit is judged on: title and body, as the model saw them."""
    return f"{title} {text}" if title else text


def behaviour_metrics(turns: list[Turn], prediction: str | None) -> dict[str, float]:
    """Searches (sub-queries count one each), turns, invalid actions and whether an answer tag was given."""
    searches = sum(len(t.sub_queries) if t.sub_queries else int(t.query is not None) for t in turns)
    return {
        "n_searches": float(searches),
        "n_turns": float(len(turns)),
        "n_invalid": float(sum(t.invalid_action for t in turns)),
        "has_answer": float(prediction is not None),
    }


def score_record(record: ExampleRecord) -> dict[str, float]:
    """All rule-based metrics of one example, from its prediction, gold answers and turns."""
    passages = [passage_text(p.title, p.text) for turn in record.turns for p in turn.passages]
    metrics = answer_metrics(record.prediction, record.golden_answers)
    metrics["retrieval_hit"] = retrieval_hit(passages, record.golden_answers)
    metrics.update(behaviour_metrics(record.turns, record.prediction))
    return metrics
