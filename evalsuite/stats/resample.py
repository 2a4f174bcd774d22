"""Vectorized resampling: bootstrap means and sign-flip randomization, the same draws for every system."""

from __future__ import annotations

import zlib

import numpy as np

# Index entries generated per chunk: bounds memory (~32 MB of int64) whatever the resample count.
CHUNK_CELLS = 1 << 22
DEFAULT_SEED = 12345  # sacrebleu's default seed


def stream(seed: int, key: str = "") -> np.random.Generator:
    """A generator for one stratum (task): its draws do not depend on which other tasks are compared."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def _chunks(n_draws: int, n: int) -> list[tuple[int, int]]:
    rows = max(1, CHUNK_CELLS // max(n, 1))
    return [(start, min(rows, n_draws - start)) for start in range(0, n_draws, rows)]


def bootstrap_means(scores: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(systems × n) scores → (n_resamples × systems) means, each resample drawing the same n examples for all systems.

    A resample is stored as per-example counts, so all systems' means come out of one matrix product.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    k, n = scores.shape
    out = np.empty((n_resamples, k))
    for start, m in _chunks(n_resamples, n):
        idx = rng.integers(0, n, size=(m, n))
        idx += (np.arange(m) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n).astype(float)
        out[start : start + m] = counts @ scores.T
    out /= n
    return out


def sign_flip_means(diffs: np.ndarray, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """(systems × n) per-example differences → (n_permutations × systems) mean differences after random swaps.

    Swapping the two systems' outputs on an example flips the sign of its difference (paired approximate
    randomization); one swap pattern per permutation is shared by all systems.
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    k, n = diffs.shape
    out = np.empty((n_permutations, k))
    for start, m in _chunks(n_permutations, n):
        signs = rng.integers(0, 2, size=(m, n)).astype(float) * 2.0 - 1.0
        out[start : start + m] = signs @ diffs.T
    out /= n
    return out


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each column of (draws × systems) samples."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high


def bootstrap_pvalue(resampled: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Two-sided p-value of a zero difference from bootstrap differences: p = (c + 1) / (B + 1).

    c counts resamples whose distance from the observed difference is at least the observed difference (the
    bootstrap distribution shifted to the null). sacrebleu instead centres |d_b| on its own mean and compares with
    |d|, which our simulation shows rejects a true null about 10% of the time at α = 0.05 (docs/statistics.md).
    When the two systems agree on every example every resample is 0 and the difference cannot be significant: p = 1.
    """
    resampled = np.atleast_2d(resampled)
    observed = np.atleast_1d(np.asarray(observed, dtype=float))
    extreme = np.abs(resampled - observed) >= np.abs(observed) - _tolerance(observed)
    p = (extreme.sum(axis=0) + 1.0) / (resampled.shape[0] + 1.0)
    degenerate = np.all(resampled == 0.0, axis=0) & (observed == 0.0)
    return np.where(degenerate, 1.0, p)


def randomization_pvalue(permuted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Two-sided p-value of approximate randomization: p = (c + 1) / (R + 1), c = #{|d_r| ≥ |d|} (scipy's ≥)."""
    permuted = np.atleast_2d(permuted)
    observed = np.atleast_1d(np.asarray(observed, dtype=float))
    extreme = np.abs(permuted) >= np.abs(observed) - _tolerance(observed)
    return (extreme.sum(axis=0) + 1.0) / (permuted.shape[0] + 1.0)


def _tolerance(observed: np.ndarray) -> np.ndarray:
    # Means of the same numbers summed in another order differ in the last bits; ties must still count as ties.
    return 1e-9 * np.maximum(1.0, np.abs(observed))
