"""Paired tests of two systems on the same examples: exact McNemar, approximate randomization, paired bootstrap."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import bdtr

from evalsuite.errors import EvalsuiteError
from evalsuite.stats import resample
from evalsuite.stats.resample import DEFAULT_SEED, is_binary


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test: discordant counts and the two-sided binomial p-value."""

    n: int
    only_a: int  # examples system A gets right and B wrong
    only_b: int
    p_value: float
    test: str = "mcnemar-exact"


@dataclass(frozen=True)
class RandomizationResult:
    """Paired approximate randomization of the mean difference A − B."""

    n: int
    difference: float
    p_value: float
    n_permutations: int
    seed: int
    test: str = "approximate-randomization"


@dataclass(frozen=True)
class BootstrapResult:
    """Paired bootstrap of the mean difference A − B: percentile CI and two-sided p-value."""

    n: int
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    n_resamples: int
    seed: int
    confidence: float
    test: str = "paired-bootstrap"


def _as_pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise EvalsuiteError(
            f"paired scores must be two 1-D arrays of equal length, got shapes {a.shape} and {b.shape}",
            hint="pair the systems by example id first (evalsuite.stats.align_by_id)",
        )
    if a.size == 0:
        raise EvalsuiteError("no examples to compare")
    return a, b


def mcnemar_pvalues(only_a: ArrayLike, only_b: ArrayLike, mid_p: bool = False) -> np.ndarray:
    """Exact two-sided McNemar p-values, vectorized: 2 · Binom(min(b, c); b + c, ½), capped at 1 (statsmodels' exact).

    `mid_p`: the mid-p McNemar test, 2 · P(X ≤ m) − P(X = m) with m = min(b, c) (Fagerland, Lydersen and Laake,
    2013: close to the nominal level where the exact test is conservative, which it is by discreteness)."""
    a, b = np.asarray(only_a), np.asarray(only_b)
    total = a + b
    smaller = np.minimum(a, b)
    # bdtr is the binomial CDF (scipy.stats.binom.cdf's, without the second of importing scipy.stats)
    below = bdtr(smaller, total, 0.5)
    if mid_p:
        at = below - np.where(smaller > 0, bdtr(np.maximum(smaller - 1, 0), total, 0.5), 0.0)
        p = np.minimum(1.0, 2.0 * below - at)
    else:
        p = np.minimum(1.0, 2.0 * below)
    return np.where(total == 0, 1.0, p)


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> McNemarResult:
    """Exact McNemar test on paired binary scores (EM, cover-EM)."""
    a, b = _as_pair(a, b)
    if not (is_binary(a) and is_binary(b)):
        raise EvalsuiteError(
            "McNemar's test needs 0/1 scores per example",
            hint="use approximate_randomization for continuous metrics such as F1",
        )
    only_a = int(np.sum((a == 1.0) & (b == 0.0)))
    only_b = int(np.sum((a == 0.0) & (b == 1.0)))
    return McNemarResult(n=a.size, only_a=only_a, only_b=only_b, p_value=float(mcnemar_pvalues(only_a, only_b)))


def approximate_randomization(
    a: np.ndarray,
    b: np.ndarray,
    n_permutations: int = 10_000,
    seed: int = DEFAULT_SEED,
    key: str = "",
    mid_p: bool = False,
    alternative: str = "two-sided",
) -> RandomizationResult:
    """Paired approximate randomization: swap the two systems' scores per example at random (for F1 and other
    means); `mid_p` counts ties half (resample.randomization_pvalue). `alternative="greater"`: the one-sided test of
    mean(a − b) > 0, p = (#{d_r ≥ d} + 1) / (R + 1) (a pre-registered direction)."""
    a, b = _as_pair(a, b)
    diff = a - b
    permuted = resample.sign_flip_means(diff[None, :], n_permutations, seed, key)
    observed = np.array([diff.mean()])
    if alternative == "greater":
        p = float(resample.one_sided_randomization_pvalue(permuted, observed)[0])
    elif alternative == "two-sided":
        p = float(resample.randomization_pvalue(permuted, observed, mid_p)[0])
    else:
        raise ValueError(f"alternative must be 'two-sided' or 'greater', not {alternative!r}")
    return RandomizationResult(a.size, float(observed[0]), p, n_permutations, seed)


def paired_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    key: str = "",
) -> BootstrapResult:
    """Paired bootstrap of A − B: the same resampled examples for both systems (sacrebleu), p = (c + 1)/(B + 1).

    0/1 scores draw the 2×2 table's cell counts exactly (resample.binary_paired_means); with a and b in example-id
    order this is what `compare()` reports for benchmark `key`.
    """
    a, b = _as_pair(a, b)
    _, diffs = resample.paired_means(np.vstack([b, a]), n_resamples, seed, key)
    return _bootstrap_result(diffs[:, 0], float(a.mean() - b.mean()), a.size, n_resamples, seed, confidence)


def stratified_bootstrap(
    tasks: Mapping[str, tuple[np.ndarray, np.ndarray]],
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap of the macro-average difference over benchmarks, resampling within each benchmark.

    Each benchmark keeps its size in every resample, so the average's interval reflects each benchmark's own n
    (pooling 125 Bamboogle questions with 1000 NQ ones would let NQ dominate the resampling).
    """
    if not tasks:
        raise EvalsuiteError("no benchmarks to average")
    total = np.zeros(n_resamples)
    observed = 0.0
    n = 0
    for task, (a, b) in tasks.items():
        a, b = _as_pair(a, b)
        _, diffs = resample.paired_means(np.vstack([b, a]), n_resamples, seed, task)
        total += diffs[:, 0]
        observed += float(a.mean() - b.mean())
        n += a.size
    k = len(tasks)
    return _bootstrap_result(total / k, observed / k, n, n_resamples, seed, confidence, test="stratified-bootstrap")


def _bootstrap_result(
    diffs: np.ndarray,
    observed: float,
    n: int,
    n_resamples: int,
    seed: int,
    confidence: float,
    test: str = "paired-bootstrap",
) -> BootstrapResult:
    low, high = resample.percentile_interval(diffs[:, None], confidence)
    p = float(resample.bootstrap_pvalue(diffs[:, None], np.array([observed]))[0])
    return BootstrapResult(n, observed, float(low[0]), float(high[0]), p, n_resamples, seed, confidence, test)
