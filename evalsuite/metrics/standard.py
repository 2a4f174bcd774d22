"""The standard metrics every task is scored with unless it names its own (docs/metrics.md): answer metrics
(FlashRAG / SQuAD conventions), retrieval hit, search behaviour and, only under `evalsuite score`, novelty counts.

Each is one declaration and one function of a `MetricInput`; the registry does the rest.
"""

from __future__ import annotations

from evalsuite.metrics.answer import cover_exact_match, exact_match, normalize_answer, retrieval_hit
from evalsuite.metrics.registry import MetricInput, MetricSpec, register_metric, register_normalizer


def _searches(example: MetricInput) -> float:
    # A turn with sub-queries searched once per sub-query.
    return float(sum(len(t.sub_queries) if t.sub_queries else int(t.query is not None) for t in example.turns))


def _whitespace_only(text: str) -> str:
    return " ".join(text.split())


register_normalizer("squad", normalize_answer)
register_normalizer("whitespace", _whitespace_only)

STANDARD_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "em",
        "EM",
        "binary",
        lambda x: exact_match(x.answer, x.golds, x.normalize),
        description="exact match after normalization (FlashRAG em)",
    ),
    MetricSpec(
        "cover_em",
        "cover-EM",
        "binary",
        lambda x: cover_exact_match(x.answer, x.golds, x.normalize),
        description="a normalized gold is contained in the normalized prediction (FlashRAG acc, Search-R1 subem)",
    ),
    MetricSpec(
        "f1",
        "F1",
        "continuous",
        lambda x: x.token_scores["f1"],
        interval="effective_wilson",
        description="SQuAD token F1 with HotpotQA's yes/no/noanswer rule, maximised over golds",
    ),
    MetricSpec(
        "precision",
        "Precision",
        "continuous",
        lambda x: x.token_scores["precision"],
        average="none",
        summary=False,
        interval="effective_wilson",
        description="token precision, maximised over golds",
    ),
    MetricSpec(
        "recall",
        "Recall",
        "continuous",
        lambda x: x.token_scores["recall"],
        average="none",
        summary=False,
        interval="effective_wilson",
        description="token recall, maximised over golds",
    ),
    MetricSpec(
        "retrieval_hit",
        "retrieval hit",
        "binary",
        lambda x: retrieval_hit(x.passages, x.golds, x.normalize),
        average="none",
        over_samples=("avg", "pass"),  # not of the answer: the majority answer's sample is no retrieval's
        description="a normalized gold is contained in a retrieved passage (Progress Table 4)",
    ),
    MetricSpec(
        "n_searches",
        "searches",
        "count",
        _searches,
        average="none",
        description="search calls; each sub-query counts one",
    ),
    MetricSpec(
        "n_turns",
        "turns",
        "count",
        lambda x: float(len(x.turns)),
        average="none",
        summary=False,
        description="model turns",
    ),
    MetricSpec(
        "n_invalid",
        "invalid actions",
        "count",
        lambda x: float(sum(t.invalid_action for t in x.turns)),
        higher_is_better=False,
        average="none",
        summary=False,
        description="turns whose action did not parse",
    ),
    MetricSpec(
        "has_answer",
        "answered",
        "binary",
        lambda x: float(x.prediction is not None),
        average="none",
        over_samples=("avg", "pass"),  # the majority answer is always an answer
        description="an answer tag was given",
    ),
)

for _spec in STANDARD_METRICS:
    register_metric(_spec)
