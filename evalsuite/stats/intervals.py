"""The confidence interval of one run's mean score: one method per metric kind, used by every output.

metrics.json (evalsuite.runs.summary), `evalsuite table` (evalsuite.stats.compare) and the leaderboard all call
`mean_intervals`, with the same seed and resample count, so a run never shows two different intervals. The method
is the one the metric's declaration names (evalsuite.metrics.registry: by default from its kind), never a guess
from the values a run happens to hold; a metric the registry does not know (a judge score) gets the bootstrap.

- binary metrics (0/1 per example: EM, cover-EM, retrieval hit): the Wilson score interval. A percentile
  bootstrap of a rare rate collapses to [0, 0] when no example succeeds and covers a 1% rate on 125 questions
  only about 72% of the time; Wilson's exact coverage stays within 93–97.5% (tests/stats/test_interval_coverage.py).
- scores bounded in [0, 1] (F1, precision, recall: `interval="effective_wilson"`): Wilson's interval at the
  effective sample size n / deff (Korn and Graubard, 1998), deff = s² / (p̂(1 − p̂)) the share of a 0/1 variable's
  variance the scores have, kept within [DEFF_FLOOR, 1]. The percentile bootstrap of a rare F1 at n = 125 covered
  89% with 2% zero-width intervals (no nonzero score); this covers 94–97% there (tests/stats/test_interval_coverage.py).
- other continuous and count metrics (searches, turns): the percentile bootstrap of the run's own scores on the
  benchmark, drawn from the benchmark's stream (`resample.stream(INTERVAL_SEED, task)`) over the sorted scores, so
  the interval depends only on the run's scores, never on the order of its examples or on other runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.registry import IntervalMethod, get_metric, is_registered
from evalsuite.stats import resample

INTERVAL_SEED = resample.DEFAULT_SEED
INTERVAL_RESAMPLES = 2_000
CONFIDENCE = 0.95
# The least design effect allowed: a handful of nonzero partial scores estimate the variance poorly, and without a
# floor a run of a few equal partial scores would get an interval too narrow to cover (88% at n = 125 for an F1
# that is nonzero 3% of the time; 0.6 keeps every simulated cell within 94.5–97%).
DEFF_FLOOR = 0.6
# The same for a question's mean over K samples (avg@K, pass@k: `interval="cluster_wilson"`): a mean of K 0/1
# samples has a design effect of 1/K or more, so the floor only keeps a degenerate run (every question with the same
# mean) off a zero-width interval; 1/64 is that of 64 samples, more than runs draw. A floor of 0.6 there over-covers
# (99% at K = 4 for a 10% rate): the clustering of samples legitimately narrows the interval.
CLUSTER_DEFF_FLOOR = 1 / 64


@dataclass(frozen=True)
class Interval:
    """A mean and its confidence interval."""

    mean: float
    low: float
    high: float


def interval_method(metric: str) -> IntervalMethod:
    """The interval a metric declares (Wilson for binary metrics, bootstrap otherwise); bootstrap if unregistered."""
    declared = get_metric(metric).interval if is_registered(metric) else None
    return declared or "bootstrap"


def method_name(method: IntervalMethod) -> str:
    """How intervals of this method are computed, for footnotes and metrics.json."""
    if method == "wilson":
        return "Wilson score interval"
    if method == "effective_wilson":
        return (
            f"Wilson score interval at the effective sample size n/deff (deff = s²/(p̂(1−p̂)) within [{DEFF_FLOOR}, 1])"
        )
    if method == "cluster_wilson":
        return (
            "Wilson score interval over questions at the effective "
            "sample size n/deff (deff = s²/(p̂(1−p̂)) within [1/64, 1])"
        )
    return f"percentile bootstrap ({INTERVAL_RESAMPLES} resamples, seed {INTERVAL_SEED}, one stream per benchmark)"


def wilson(successes: np.ndarray, n: int | np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (never zero-width, never outside [0, 1]); n may be fractional."""
    z = ndtri(0.5 + confidence / 2)  # the normal quantile (scipy.stats.norm.ppf's, without importing scipy.stats)
    k = np.asarray(successes, dtype=float)
    centre = (k + z * z / 2) / (n + z * z)
    half = z * np.sqrt(np.maximum(k * (n - k) / n, 0.0) + z * z / 4) / (n + z * z)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def design_effects(scores: np.ndarray, floor: float = DEFF_FLOOR) -> np.ndarray:
    """Each row's variance as a share of a 0/1 variable's with its mean, within [floor, 1]; 1 at a mean of 0 or 1."""
    n = scores.shape[1]
    means = scores.mean(axis=1)
    binary_variance = means * (1.0 - means)
    variance = scores.var(axis=1, ddof=1) if n > 1 else np.zeros_like(means)
    ratio = np.divide(variance, binary_variance, out=np.ones_like(means), where=binary_variance > 0)
    return np.clip(ratio, floor, 1.0)


def effective_wilson(
    scores: np.ndarray, confidence: float = CONFIDENCE, floor: float = DEFF_FLOOR
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's interval of each row's mean of [0, 1] scores at its effective sample size n / deff."""
    effective_n = scores.shape[1] / design_effects(scores, floor)
    return wilson(scores.mean(axis=1) * effective_n, effective_n, confidence)


def bootstrap_draws(values: np.ndarray, key: str) -> np.ndarray:
    """INTERVAL_RESAMPLES bootstrap means of one run's scores
    on benchmark `key` (order-invariant: scores are sorted)."""
    ordered = np.sort(np.asarray(values, dtype=float))[None, :]
    return resample.bootstrap_means(ordered, INTERVAL_RESAMPLES, resample.stream(INTERVAL_SEED, key))[:, 0]


def mean_intervals(metric: str, scores: np.ndarray, key: str, confidence: float = CONFIDENCE) -> list[Interval]:
    """The interval of each row's mean of (rows × n) scores of one metric on one benchmark `key`; rows are runs."""
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    rows, n = scores.shape
    if n == 0:
        return [Interval(np.nan, np.nan, np.nan) for _ in range(rows)]
    means = scores.mean(axis=1)
    method = interval_method(metric)
    if method == "wilson":
        if not resample.is_binary(scores):
            raise EvalsuiteError(
                f"{metric} is declared binary but {key} holds scores other than 0 and 1",
                hint="rescore the run with `evalsuite score`, or declare the metric continuous",
            )
        low, high = wilson(scores.sum(axis=1), n, confidence)
    elif method in ("effective_wilson", "cluster_wilson"):
        if np.any((scores < 0.0) | (scores > 1.0)):
            raise EvalsuiteError(
                f"{metric} is declared bounded in [0, 1] but {key} holds scores outside it",
                hint="rescore the run with `evalsuite score`, or declare the metric's interval 'bootstrap'",
            )
        floor = DEFF_FLOOR if method == "effective_wilson" else CLUSTER_DEFF_FLOOR
        low, high = effective_wilson(scores, confidence, floor)
    elif n < 2:
        low = high = means
    else:
        draws = np.column_stack([bootstrap_draws(row, key) for row in scores])
        low, high = resample.percentile_interval(draws, confidence)
    return [Interval(float(m), float(lo), float(hi)) for m, lo, hi in zip(means, low, high)]
