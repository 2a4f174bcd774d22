"""Vectorized resampling, exact and seeded: bootstrap means (one set of resamples for all systems, frequent score
patterns counted by a multinomial draw), the 2×2-table bootstrap of 0/1 scores, and sign-flip randomization."""

from __future__ import annotations

import zlib

import numpy as np
from scipy import sparse

# Index entries generated per chunk: bounds memory (about 12 MB) whatever the resample count.
CHUNK_CELLS = 1 << 20
DEFAULT_SEED = 12345  # sacrebleu's default seed


def stream(seed: int, key: str = "") -> np.random.Generator:
    """A generator for one stratum (task): its draws do not depend on which other tasks are compared."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def _chunks(n_draws: int, n: int) -> list[tuple[int, int]]:
    rows = max(1, CHUNK_CELLS // max(n, 1))
    return [(start, min(rows, n_draws - start)) for start in range(0, n_draws, rows)]


# A score pattern (one example's scores of every system) shared by at least this many examples is resampled by its
# count: one binomial step of a multinomial draw (about 60 ns) instead of that many index draws (about 5 ns each).
MIN_PATTERN_COUNT = 16
MAX_COUNTED_PATTERNS = 32


def bootstrap_means(scores: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(systems × n) scores → (n_resamples × systems) means, each resample drawing the same n examples for all systems.

    Examples with the same scores in every system (a pattern) are interchangeable, so a resample only needs how
    many draws land on each frequent pattern, one Multinomial(n, shares) draw over the frequent patterns and "the
    rest"; the draws that land on the rest pick their examples uniformly among the rest, exactly as drawing n
    indices would. Real scores are mostly 0 or 1, so most examples fall in a few patterns (all systems wrong, all
    right) and a resample costs a few binomials plus a fraction of n index draws. The picked examples form a sparse
    (resamples × rest) selection matrix whose product with the scores sums every system at once.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    k, n = scores.shape
    out = np.zeros((n_resamples, k))
    if n == 0:
        return out
    patterns, inverse, counts = np.unique(scores.T, axis=0, return_inverse=True, return_counts=True)
    by_count = np.argsort(-counts, kind="stable")[:MAX_COUNTED_PATTERNS]
    counted = by_count[counts[by_count] >= MIN_PATTERN_COUNT]
    rest = np.flatnonzero(~np.isin(inverse.ravel(), counted))
    shares = np.append(counts[counted], rest.size) / n
    counted_values = patterns[counted]
    rest_columns = np.ascontiguousarray(scores[:, rest].T)
    ones = np.ones(0)
    for start, m in _chunks(n_resamples, max(rest.size, len(counted))):
        drawn = rng.multinomial(n, shares, size=m)
        out[start : start + m] = drawn[:, :-1] @ counted_values
        if rest.size:
            in_rest = drawn[:, -1]
            total = int(in_rest.sum())
            ones = ones if ones.size >= total else np.ones(2 * total)
            picks = rng.integers(0, rest.size, size=total, dtype=np.int32)
            rows = np.concatenate([[0], np.cumsum(in_rest)]).astype(np.int32)
            selection = sparse.csr_matrix((ones[:total], picks, rows), shape=(m, rest.size))
            out[start : start + m] += selection @ rest_columns
    out /= n
    return out


def is_binary(values: np.ndarray) -> bool:
    """Whether every score is 0 or 1 (EM, cover-EM, retrieval hit)."""
    values = np.asarray(values)
    return bool(np.all((values == 0.0) | (values == 1.0)))


def binary_paired_means(scores: np.ndarray, n_resamples: int, seed: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact paired bootstrap of 0/1 scores from their 2×2 tables: (n_resamples × systems) means and differences.

    Resampling n examples of two 0/1 systems only changes how many fall in each cell of their 2×2 table (both
    right, only the system, only the baseline, both wrong), so the cell counts of a resample are one
    Multinomial(n, observed cell shares) draw: the same distribution as drawing n indices, at 4 numbers instead of n
    per resample. Row 0 is the baseline; column j of the differences is system j + 1 minus the baseline. Every
    pair draws from a fresh generator of (seed, key), so a pair's numbers never depend on the other systems.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    k, n = scores.shape
    base = scores[0] == 1.0
    means = np.empty((n_resamples, k))
    diffs = np.empty((n_resamples, k - 1))
    means[:, 0] = stream(seed, key).binomial(n, base.sum() / n, size=n_resamples) / n
    for j in range(1, k):
        system = scores[j] == 1.0
        cells = np.array([np.sum(system & ~base), np.sum(~system & base), np.sum(system & base)], dtype=float)
        shares = np.append(cells, n - cells.sum()) / n
        counts = stream(seed, key).multinomial(n, shares, size=n_resamples)
        means[:, j] = (counts[:, 0] + counts[:, 2]) / n
        diffs[:, j - 1] = (counts[:, 0] - counts[:, 1]) / n
    return means, diffs


def paired_means(scores: np.ndarray, n_resamples: int, seed: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap means of every system (row 0 the baseline) and of each system's difference from the baseline.

    0/1 scores use the exact 2×2-table draws (binary_paired_means); other scores the shared index draws of
    bootstrap_means, whose differences are taken resample by resample.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    if is_binary(scores):
        return binary_paired_means(scores, n_resamples, seed, key)
    means = bootstrap_means(scores, n_resamples, stream(seed, key))
    return means, means[:, 1:] - means[:, :1]


# A difference size shared by at least this many examples is permuted by counting coins in 64-bit words.
MIN_GROUP_COUNT = 16


def sign_flip_means(diffs: np.ndarray, n_permutations: int, seed: int, key: str) -> np.ndarray:
    """(systems × n) per-example differences → (n_permutations × systems) mean differences after random swaps.

    Swapping the two systems' outputs on an example flips the sign of its difference (paired approximate
    randomization), so examples with d = 0 never matter and examples with the same |d| are interchangeable: for a
    size shared by many examples only how many of them come out positive matters, the popcount of that many random
    bits (grouped_sign_flip_sums); the remaining examples get one random sign each (dense_sign_flip_sums). Each
    system draws from a fresh generator of (seed, key), so its p-value never depends on the other systems.
    """
    diffs = np.atleast_2d(np.asarray(diffs, dtype=float))
    k, n = diffs.shape
    out = np.empty((n_permutations, k))
    for j in range(k):
        rng = stream(seed, key)
        magnitudes = np.abs(diffs[j][diffs[j] != 0.0])
        sizes, inverse, counts = np.unique(magnitudes, return_inverse=True, return_counts=True)
        grouped = counts >= MIN_GROUP_COUNT
        out[:, j] = grouped_sign_flip_sums(sizes[grouped], counts[grouped], n_permutations, rng)
        single = magnitudes[~grouped[inverse]]
        if single.size:
            out[:, j] += dense_sign_flip_sums(single, n_permutations, rng)
    return out / n


def grouped_sign_flip_sums(sizes: np.ndarray, counts: np.ndarray, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Sums Σ ±|d| under random signs, for `counts[i]` differences of size `sizes[i]`.

    The positives among the examples of one size are a popcount of that many random bits (a Binomial(count, ½)
    draw), so Σ ±|d| = Σ_size size · (2 · positives − count). Bits come as 64-bit words, a run of words per size
    with the unused high bits of its last word masked; a permutation costs about Σ count / 64 words.
    """
    if counts.size == 0:
        return np.zeros(n_permutations)
    words_per = (counts + 63) // 64
    starts = np.concatenate([[0], np.cumsum(words_per)[:-1]])
    mask = np.full(int(words_per.sum()), np.iinfo(np.uint64).max, dtype=np.uint64)
    tail = counts % 64
    last = starts + words_per - 1
    mask[last[tail > 0]] = (np.uint64(1) << tail[tail > 0].astype(np.uint64)) - np.uint64(1)
    word_size = np.repeat(sizes, words_per)  # Σ_size size · positives = Σ_word size(word) · popcount(word)
    out = np.empty(n_permutations)
    for start, m in _chunks(n_permutations, mask.size):
        bits = rng.integers(0, np.iinfo(np.uint64).max, size=(m, mask.size), dtype=np.uint64, endpoint=True) & mask
        out[start : start + m] = 2.0 * (np.bitwise_count(bits).astype(float) @ word_size)
    return out - float(counts @ sizes)


# unpackbits order: bit k of a byte (k = 0 the most significant) is example 8j + k of byte j.
_BYTE_BITS = ((np.arange(256)[:, None] >> (7 - np.arange(8))) & 1).astype(float)


def dense_sign_flip_sums(values: np.ndarray, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Sums Σ ±v_i of one row of differences, each example with its own random sign.

    Signs come as random bytes b; the permuted sum is Σ (2b − 1)·v = 2·b·v − Σ v, and b·v is summed a byte at a
    time from a table of the 256 partial sums of each 8 examples, one lookup per 8 examples.
    """
    n = values.size
    n_bytes = (n + 7) // 8
    padded = np.zeros(n_bytes * 8)
    padded[:n] = values
    table = (padded.reshape(n_bytes, 8) @ _BYTE_BITS.T).ravel()  # [byte j, value b] → Σ of the examples b selects
    offsets = np.arange(n_bytes, dtype=np.intp) * 256
    out = np.empty(n_permutations)
    for start, m in _chunks(n_permutations, n_bytes):
        packed = rng.integers(0, 256, size=(m, n_bytes), dtype=np.uint8)
        out[start : start + m] = 2.0 * table[packed + offsets].sum(axis=1)
    return out - float(values.sum())


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
