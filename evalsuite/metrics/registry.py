"""The metric registry: one declaration per metric, read by the scorer, metrics.json, tables, the leaderboard,
the lm-eval export and the run tables (docs/metrics.md).

A metric is a `MetricSpec`: its name, printed label, kind, direction, how it averages over benchmarks, the
interval and paired test its kind calls for, and the function that scores one example. Adding a metric is one
`register_metric(MetricSpec(...))` and that function; nothing else names metrics.

The kind decides the statistics, never the values a run happens to hold: a binary metric (0/1 per example) gets
the Wilson interval and the exact McNemar test, a continuous or count metric the percentile bootstrap and
approximate randomization, even on a run where every F1 happens to be 0 or 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import Registry, named_instance

MetricKind = Literal["binary", "continuous", "count"]
# How a metric's benchmark means combine into a group average: the unweighted mean of benchmark means (the papers'
# "Avg." columns), or not averaged at all.
Averaging = Literal["macro", "none"]
# wilson: 0/1 scores; effective_wilson: scores bounded in [0, 1] (evalsuite.stats.intervals); bootstrap: any others.
# cluster_wilson: the same for a question's mean over its samples (avg@K, pass@k), whose design effect may be small.
IntervalMethod = Literal["wilson", "effective_wilson", "cluster_wilson", "bootstrap"]
SignificanceTest = Literal["mcnemar", "randomization", "bootstrap"]
# What a metric means over a question's K samples (evalsuite.metrics.samples): its mean (avg@K), its value on the
# majority answer (maj@K: only for a metric of the answer), the chance that one of k samples scores 1 (pass@k: only
# for a 0/1 success).
SampleAggregate = Literal["avg", "maj", "pass"]
_SAMPLE_AGGREGATES_BY_KIND: dict[str, tuple[SampleAggregate, ...]] = {
    "binary": ("avg", "maj", "pass"),
    "continuous": ("avg", "maj"),
    "count": ("avg",),
}

_INTERVAL_BY_KIND: dict[str, IntervalMethod] = {"binary": "wilson", "continuous": "bootstrap", "count": "bootstrap"}
_TEST_BY_KIND: dict[str, SignificanceTest] = {
    "binary": "mcnemar",
    "continuous": "randomization",
    "count": "randomization",
}


class TurnLike(Protocol):
    """What a metric may read of one recorded turn (evalsuite.runs.schema.Turn has all of it)."""

    query: str | None
    sub_queries: list[str]
    invalid_action: bool


@dataclass(frozen=True)
class MetricInput:
    """One example as a metric sees it: the prediction (None: no answer given), the gold answers, the retrieved
    passages' texts, the turns and the task's answer normalization. Shared work is cached per example."""

    prediction: str | None
    golds: Sequence[str]
    passages: Sequence[str] = ()
    turns: Sequence[TurnLike] = ()
    normalize: Callable[[str], str] = field(default=lambda text: text, repr=False)
    # The record itself, for a metric that needs more (its metadata, say); None when scoring bare answers.
    record: Any = field(default=None, repr=False, compare=False)

    @property
    def answer(self) -> str:
        """The prediction as scored: a missing prediction scores as the empty string."""
        return self.prediction or ""

    @cached_property
    def token_scores(self) -> dict[str, float]:
        """Token F1, precision and recall (FlashRAG), computed once for the three metrics that read them."""
        from evalsuite.metrics.answer import token_scores

        return token_scores(self.answer, self.golds, normalize=self.normalize)


@dataclass(frozen=True)
class MetricSpec:
    """One metric's declaration. `interval` and `test` default to what its kind calls for; `percent` (printed
    ×100) defaults to every kind but counts; `version` is bumped whenever the definition changes, so a score
    recorded under an older definition is never compared with today's."""

    name: str
    label: str
    kind: MetricKind
    compute: Callable[[MetricInput], float] = field(repr=False, compare=False)
    higher_is_better: bool = True
    average: Averaging = "macro"
    interval: IntervalMethod | None = None
    test: SignificanceTest | None = None
    percent: bool | None = None
    # Shown in the run and score summary tables and on the leaderboard's entry pages.
    summary: bool = True
    # Scored for every task that does not name its own metrics; False: only for the tasks that name it.
    default: bool = True
    version: int = 1
    description: str = ""
    # The aggregates over a sampled run's samples that mean something for this metric; None: what its kind allows
    # (a count has no majority answer's value; a stop reason is not an answer, nor a success to pass@k).
    over_samples: tuple[SampleAggregate, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in _INTERVAL_BY_KIND:
            raise ValueError(f"metric {self.name!r}: kind {self.kind!r} is not one of {', '.join(_INTERVAL_BY_KIND)}")
        if self.interval is None:
            object.__setattr__(self, "interval", _INTERVAL_BY_KIND[self.kind])
        if self.test is None:
            object.__setattr__(self, "test", _TEST_BY_KIND[self.kind])
        if self.percent is None:
            object.__setattr__(self, "percent", self.kind != "count")
        if self.over_samples is None:
            object.__setattr__(self, "over_samples", _SAMPLE_AGGREGATES_BY_KIND[self.kind])
        elif "pass" in self.over_samples and self.kind != "binary":
            raise ValueError(f"metric {self.name!r}: pass@k needs a binary metric, not a {self.kind} one")
        if self.test == "mcnemar" and self.kind != "binary":
            raise ValueError(f"metric {self.name!r}: McNemar's test needs a binary metric, not a {self.kind} one")

    def format(self, value: float) -> str:
        """Percent metrics ×100 with two decimals (the papers' style); others as they are."""
        return f"{value * 100:.2f}" if self.percent else f"{value:.2f}"

    def scaled(self, value: float) -> float:
        return value * 100 if self.percent else value


METRICS: Registry[MetricSpec] = Registry("metric", check=named_instance("metric", MetricSpec))


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Add a metric; names are unique, stable strings (a second, different declaration of a name is refused unless
    `replace=True`)."""
    METRICS.register(spec.name, spec, replace=replace)
    _SAMPLE_METRICS.clear()  # derived from the base declarations, which may have changed
    return spec


def is_registered(name: str) -> bool:
    return name in METRICS or sample_metric(name) is not None


def get_metric(name: str) -> MetricSpec:
    """A metric by name; an unknown name gets an error suggesting the closest registered ones."""
    if name in METRICS:
        return METRICS.get(name)
    derived = sample_metric(name)
    if derived is None:
        raise METRICS.unknown(name)
    return derived


# A metric over the K samples of a question (evalsuite.metrics.samples): <metric>_avg, <metric>_maj, <metric>_pass@k.
# Declared on first use and kept apart from METRICS: list_metrics() names the metrics an example is scored with.
_SAMPLE_METRICS: dict[str, MetricSpec] = {}
_SAMPLE_METRIC = re.compile(r"^(?P<base>.+)_(?:(?P<stat>avg|maj)|pass@(?P<k>[1-9][0-9]*))$")


def one_sample_metric(name: str) -> str | None:
    """The metric a metric over samples equals on one sample (a greedy run): X for X_avg, X_maj and X_pass@1."""
    match = _SAMPLE_METRIC.match(name)
    if match is None or match["k"] not in (None, "1"):
        return None
    return match["base"]


def per_sample_name(name: str) -> str:
    """The per-example metric a metric over samples is computed from (em for em_avg, em_maj, em_pass@4); any other
    name as it is. What a sampled run's records are scored with, and what verification recomputes per record."""
    match = _SAMPLE_METRIC.match(name)
    return match["base"] if match is not None and match["base"] in METRICS else name


def sample_metric(name: str) -> MetricSpec | None:
    """The declaration of a metric over samples, registered on first use; None when `name` is not one.

    avg@K of a 0/1 or [0, 1] metric lies in [0, 1] (Wilson at the effective sample size), of a count is a count;
    maj@K of a 0/1 metric is in [0, 1] (a tie scores the tied answers' mean); each exists only where the metric's
    `over_samples` declares it (pass@k for 0/1 metrics only). On one sample (a greedy record) each is its
    metric, so `compute` is the metric's own.
    """
    match = _SAMPLE_METRIC.match(name)
    if match is None or match["base"] not in METRICS:
        return None
    if name in _SAMPLE_METRICS:
        return _SAMPLE_METRICS[name]
    base = METRICS.get(match["base"])
    if (match["stat"] or "pass") not in (base.over_samples or ()):
        return None
    bounded = base.kind == "binary" or base.interval == "effective_wilson"
    if match["stat"] == "maj":
        # a tie between answers scores the mean of their scores, so maj@K of a 0/1 metric is in [0, 1], not 0/1
        spec = MetricSpec(
            name,
            f"{base.label} maj@K",
            "continuous" if base.kind == "binary" else base.kind,
            base.compute,
            base.higher_is_better,
            base.average,
            "effective_wilson" if bounded else base.interval,
            percent=base.percent,
            summary=False,
            default=False,
            version=base.version + 1,  # + 1: ties once went to the answer seen first
            description=f"{base.label} of the majority answer over the samples (maj@K; a tie: the tied answers' mean)",
        )
    elif match["stat"] == "avg":
        kind: MetricKind = "count" if base.kind == "count" else "continuous"
        spec = MetricSpec(
            name,
            f"{base.label} avg@K",
            kind,
            base.compute,
            base.higher_is_better,
            base.average,
            "cluster_wilson" if bounded else "bootstrap",
            percent=base.percent,
            summary=False,
            default=False,
            version=base.version,
            description=f"{base.label} averaged over the samples (avg@K)",
        )
    else:
        spec = MetricSpec(
            name,
            f"{base.label} pass@{match['k']}",
            "continuous",
            base.compute,
            base.higher_is_better,
            base.average,
            "cluster_wilson",
            summary=False,
            default=False,
            version=base.version,
            description=f"unbiased pass@{match['k']} of {base.label} (Chen et al., 2021)",
        )
    _SAMPLE_METRICS[name] = spec
    return spec


def list_metrics() -> list[MetricSpec]:
    """Every registered metric, in registration order."""
    return list(METRICS.values())


def default_metrics() -> tuple[str, ...]:
    """What a task is scored with unless it names its own metrics (`Task.metrics`): every default metric,
    so a metric registered later reaches every such task, including entries filed before it existed."""
    return tuple(m.name for m in METRICS.values() if m.default)


def averaged_metrics(names: Iterable[str] | None = None) -> list[str]:
    """The metrics that macro-average over benchmarks (metrics.json group rows, leaderboard tables): of `names`
    (a run's columns, metrics over samples included) in their order, else of the registered per-example metrics.
    Metrics over samples are named only when asked for: which were declared so far is this process's history."""
    registered = [m.name for m in METRICS.values() if m.average == "macro"]
    if names is None:
        return registered
    names = list(names)
    over_samples = [n for n in names if (spec := sample_metric(n)) is not None and spec.average == "macro"]
    return [n for n in registered if n in names] + over_samples


def summary_metrics() -> list[MetricSpec]:
    """The metrics the run and score tables show, in registration order."""
    return [m for m in METRICS.values() if m.summary]


# ---------------------------------------------------------------- answer normalization


def _check_normalizer(name: str, value: Any) -> Callable[[str], str]:
    if not callable(value):
        raise EvalsuiteError(f"answer normalization {name!r} is a {type(value).__name__}, not a function of a string")
    return value


NORMALIZERS: Registry[Callable[[str], str]] = Registry(
    "answer normalization", check=_check_normalizer, group="evalsuite.normalizers"
)


def register_normalizer(name: str, function: Callable[[str], str], *, replace: bool = False) -> None:
    """Name an answer normalization that tasks can choose (`Task.normalization`)."""
    NORMALIZERS.register(name, function, replace=replace)


def get_normalizer(name: str) -> Callable[[str], str]:
    return NORMALIZERS.get(name)


@contextmanager
def scratch_registry() -> Iterator[None]:
    """Metrics and normalizations registered inside the block are forgotten after it (tests trying one out)."""
    saved = dict(_SAMPLE_METRICS)
    try:
        with METRICS.scratch(), NORMALIZERS.scratch():
            yield
    finally:
        _SAMPLE_METRICS.clear()
        _SAMPLE_METRICS.update(saved)
