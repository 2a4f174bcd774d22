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

# The standard metrics register themselves on import. Python runs this package's __init__ before any of its modules,
# so every reader of evalsuite.metrics.registry sees them (and the registry itself imports no declarations).
from evalsuite.metrics import standard as _standard  # noqa: E402,F401
from evalsuite.metrics import termination as _termination  # noqa: E402,F401
from evalsuite.metrics import judged as _judged  # noqa: E402,F401

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
