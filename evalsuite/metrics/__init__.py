"""Metrics: answer metrics (this package's public names are a stable API), retrieval and behaviour metrics."""

from evalsuite.metrics.answer import (
    answer_metrics,
    cover_exact_match,
    exact_match,
    extract_answer,
    f1_score,
    normalize_answer,
    precision_score,
    recall_score,
    retrieval_hit,
    token_scores,
)

__all__ = [
    "answer_metrics",
    "cover_exact_match",
    "exact_match",
    "extract_answer",
    "f1_score",
    "normalize_answer",
    "precision_score",
    "recall_score",
    "retrieval_hit",
    "token_scores",
]
