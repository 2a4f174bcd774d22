"""Vectorized resampling, exact and seeded: bootstrap means (one set of resamples for all systems, frequent score
patterns counted by a multinomial draw, the other examples by Poisson counts), the 2×2-table bootstrap of 0/1
scores, and sign-flip randomization."""

from __future__ import annotations

import functools
import math
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

# Poisson counts or index picks generated per chunk: bounds memory (about 16 MB) whatever the resample count.
CHUNK_CELLS = 1 << 20
DEFAULT_SEED = 12345  # sacrebleu's default seed


def stream(seed: int, key: str = "") -> np.random.Generator:
    """A generator for one stratum (task): its draws do not depend on which other tasks are compared."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limit: object | None = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run with one BLAS thread while any caller is inside (reentrant, thread-safe).

    Our products are thin ((resamples × examples) @ (examples × systems)): OpenBLAS splits them over its own threads,
    which on two cores already busy with compare()'s benchmarks spend five times the CPU of one thread.
    """
    global _blas_users, _blas_limit
    with _blas_lock:
        if _blas_users == 0:
            _blas_limit = _threadpools().limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limit is not None:
                _blas_limit.restore_original_limits()  # type: ignore[attr-defined]
                _blas_limit = None


def _threadpools() -> ThreadpoolController:
    # Finding the loaded BLAS libraries takes milliseconds, so it is done again only when Python has imported
    # something since (a library such as torch or faiss may have brought its own BLAS, which must be limited too).
    return _threadpools_for(len(sys.modules))


@functools.lru_cache(maxsize=1)
def _threadpools_for(n_modules: int) -> ThreadpoolController:
    return ThreadpoolController()


def _chunks(n_draws: int, n: int) -> list[tuple[int, int]]:
    rows = max(1, CHUNK_CELLS // max(n, 1))
    return [(start, min(rows, n_draws - start)) for start in range(0, n_draws, rows)]


# A score pattern (one example's scores of every system) shared by at least this many examples is resampled by its
# count: one binomial step of a multinomial draw (about 90 ns) instead of that many picks (a Poisson count of about
# 4 ns each while the rest is large, else an index pick of 20 ns or more).
MIN_PATTERN_COUNT = 16
MIN_PATTERN_COUNT_SMALL_REST = 4
MAX_COUNTED_PATTERNS = 64


def bootstrap_means(scores: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(systems × n) scores → (n_resamples × systems) means, each resample drawing the same n examples for all systems.

    Examples with the same scores in every system (a pattern) are interchangeable, so a resample only needs how
    many draws land on each frequent pattern, one Multinomial(n, shares) draw over the frequent patterns and "the
    rest"; the draws that land on the rest pick their examples uniformly among the rest, exactly as drawing n
    indices would (UniformPicker). Real scores are mostly 0 or 1, so most examples fall in a few patterns (all
    systems wrong, all right) and a resample costs a few binomials plus the picks among the rest. One system's
    scores (a run's own interval) take few distinct values, so nearly all of them are counted.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    k, n = scores.shape
    if n == 0:
        return np.zeros((n_resamples, k))
    patterns, inverse, counts = score_patterns(scores)
    by_count = np.argsort(-counts, kind="stable")[:MAX_COUNTED_PATTERNS]
    counted = by_count[counts[by_count] >= MIN_PATTERN_COUNT]
    if n - counts[counted].sum() < POISSON_MIN_ROWS:
        counted = by_count[counts[by_count] >= MIN_PATTERN_COUNT_SMALL_REST]
    rest = np.flatnonzero(~np.isin(inverse, counted))
    shares = np.append(counts[counted], rest.size) / n
    counted_values = patterns[counted]
    with one_blas_thread():
        drawn = rng.multinomial(n, shares, size=n_resamples)
        out = drawn[:, :-1] @ counted_values
        if rest.size:
            out += UniformPicker(scores[:, rest].T, n).sums(drawn[:, -1], rng)
    return out / n


def score_patterns(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct columns of (systems × n) scores (patterns × systems), each example's pattern and their counts.

    np.unique(axis=0) sorts the columns as byte strings; numbering each system's distinct values and combining the
    numbers into one integer per example (mixed radix, the first system most significant: the same order) sorts
    plain integers instead, about eight times faster.
    """
    key = np.zeros(scores.shape[1], dtype=np.int64)
    radix = 1
    for row in scores[::-1]:
        values, number = np.unique(row, return_inverse=True)
        if radix * values.size >= 1 << 62:
            patterns, inverse, counts = np.unique(scores.T, axis=0, return_inverse=True, return_counts=True)
            return patterns, inverse.ravel(), counts
        key += number * radix
        radix *= values.size
    _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    return scores[:, first].T, inverse, counts


# Below this many rows the picks added to the Poisson counts (POISSON_MARGIN_SD·√(2·rows)) are a large share of all.
POISSON_MIN_ROWS = 1024
POISSON_MARGIN_SD = 2.0
POISSON_REDRAWS = 8


class UniformPicker:
    """Row b of `sums(picks)`: the sum of picks[b] rows of `values` drawn uniformly with replacement (the rest of a
    resample of n examples, so picks[b] ~ Binomial(n, rows / n)).

    Few rows: each pick's index is drawn (index_pick_sums). Many rows (POISSON_MIN_ROWS or more): how often each row
    is picked is drawn instead. Independent Poisson(λ) counts, one per row, are, given their total T, exactly the
    counts of T uniform picks (a multinomial is a Poisson vector conditioned on its total), and adding picks[b] − T
    more uniform picks by index makes them the counts of picks[b] picks. A Poisson count costs a sixteenth of a
    64-bit draw and half a table lookup (PoissonBits), an index pick 10 to 30 ns with its sum. λ is set
    POISSON_MARGIN_SD standard deviations of picks[b] − T below picks[b]'s mean, so T exceeds picks[b] in about one
    row in 45; such a row draws its counts again (a condition on T alone, which keeps them multinomial; fewer
    redraws would cost more added picks), and after POISSON_REDRAWS tries all its picks are drawn by index. The
    counts of a chunk of resamples form a dense (resamples × rows) matrix whose product with the values and a column
    of ones (for T) sums every system at once; the added picks of all resamples are summed together at the end.
    """

    def __init__(self, values: np.ndarray, n: int) -> None:
        rows = values.shape[0]
        self.values = np.ascontiguousarray(values, dtype=float)
        self.poisson: PoissonBits | None = None
        if rows >= POISSON_MIN_ROWS:
            # picks[b] ~ Binomial(n, rows / n): mean `rows`, variance rows·(1 − rows/n); T ~ Poisson(λ·rows)
            spread = np.sqrt(rows * (1.0 - rows / n) + rows)
            self.poisson = PoissonBits.of(max(rows - POISSON_MARGIN_SD * spread, 0.0) / rows)
            self.with_ones = np.hstack([self.values, np.ones((rows, 1))])

    def sums(self, picks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.poisson is None:
            return index_pick_sums(self.values, picks, rng)
        rows = self.values.shape[0]
        out = np.empty((picks.size, self.with_ones.shape[1]))
        chunks = _chunks(picks.size, rows)
        scratch = DrawScratch(max(m for _, m in chunks) * rows)
        for start, m in chunks:
            part, wanted = out[start : start + m], picks[start : start + m]
            part[:] = self.poisson.draw(m, rows, rng, scratch) @ self.with_ones
            for _ in range(POISSON_REDRAWS):
                if not (over := np.flatnonzero(part[:, -1] > wanted)).size:
                    break
                part[over] = self.poisson.draw(over.size, rows, rng, scratch) @ self.with_ones
            else:  # a row wanting far fewer picks than usual (never in a bootstrap): all of them by index
                part[part[:, -1] > wanted] = 0.0
        missing = picks - out[:, -1].astype(np.int64)
        return out[:, :-1] + index_pick_sums(self.values, missing, rng)


def index_pick_sums(values: np.ndarray, picks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row b: the sum of `picks[b]` rows of `values` drawn uniformly by index; a sparse selection matrix sums them."""
    from scipy import sparse  # 0.15 s to import, which tables of 0/1 metrics never need

    rows = values.shape[0]
    out = np.zeros((picks.size, values.shape[1]))
    for start, m in _chunks(picks.size, int(picks.mean()) + 1 if picks.size else 1):
        chunk = picks[start : start + m]
        total = int(chunk.sum())
        if total:
            indices = rng.integers(0, rows, size=total)
            indptr = np.concatenate([[0], np.cumsum(chunk)])
            out[start : start + m] = sparse.csr_matrix((np.ones(total), indices, indptr), shape=(m, rows)) @ values
    return out


_BITS = 16


@dataclass(frozen=True)
class PoissonBits:
    """Independent Poisson(λ) counts, two per 16 random bits, exact to double precision (that of numpy's samplers).

    A pair of counts (a, b) has probability P(a)·P(b); it owns floor(2¹⁶·P(a)·P(b)) of the 65,536 bit patterns, and
    the L patterns left over at the top (L is the sum of the fractional parts) draw a double u ∈ [0, L) and take the
    pair whose fractional part u falls in: P(a, b) = floor / 2¹⁶ + (L / 2¹⁶)·(frac / L) exactly. A pair costs an
    eighth of a 64-bit draw and one lookup in a 128 KB table of the two counts as bytes (`codes`; counts stay below
    24), which stays in a core's L2 cache: with the conversion to doubles 0.7 ns a count, against 1.3 ns from the
    1 MB table of complex pairs (measured alone); about one pair in 2,000 needs the double.
    """

    table: np.ndarray  # complex128, a + bj for each bit pattern (0 from `leftover_from` on, where the double decides)
    leftover_from: int
    leftover_pairs: np.ndarray  # complex128, every pair (a, b) in table order
    leftover_edges: np.ndarray  # cumulative fractional parts: pair i for u in [edges[i-1], edges[i])
    codes: np.ndarray  # uint16 whose two bytes are the counts a, b of `table`, a first in memory (draw's lookups)
    leftover_codes: np.ndarray  # the same for `leftover_pairs`

    @classmethod
    @functools.lru_cache(maxsize=64)
    def of(cls, lam: float) -> PoissonBits:
        k = np.arange(24)  # P(24) < 1e-23 for λ ≤ 1: no pattern, no fractional part worth a double
        log_factorial = np.array([math.lgamma(i + 1) for i in k])
        pmf = np.exp(-lam + k * np.log(lam) - log_factorial) if lam > 0 else (k == 0).astype(float)
        pairs = (k[:, None] + 1j * k[None, :]).ravel()
        scaled = np.outer(pmf, pmf).ravel() * (1 << _BITS)
        whole = np.floor(scaled).astype(np.int64)
        table = np.zeros(1 << _BITS, dtype=complex)
        table[: whole.sum()] = np.repeat(pairs, whole)
        return cls(table, int(whole.sum()), pairs, np.cumsum(scaled - whole), _byte_pairs(table), _byte_pairs(pairs))

    def draw(self, rows: int, columns: int, rng: np.random.Generator, scratch: DrawScratch | None = None) -> np.ndarray:
        """A (rows × columns) float array of independent Poisson(λ) counts: in `scratch`'s memory when given (the
        next draw into it overwrites them)."""
        cells = rows * columns
        lookups = -(-cells // 2)
        scratch = scratch or DrawScratch(cells)
        bits = rng.bit_generator.random_raw(-(-lookups // 4)).view(np.uint16)[:lookups]
        index, pairs = scratch.index[:lookups], scratch.pairs[:lookups]
        np.copyto(index, bits)
        np.take(self.codes, index, out=pairs)
        leftover = np.flatnonzero(bits >= self.leftover_from)
        if leftover.size:
            u = rng.random(leftover.size) * self.leftover_edges[-1]
            which = np.searchsorted(self.leftover_edges, u, side="right")
            pairs[leftover] = self.leftover_codes[np.minimum(which, self.leftover_codes.size - 1)]
        counts = scratch.counts[:cells].reshape(rows, columns)
        np.copyto(counts, pairs.view(np.uint8)[:cells].reshape(rows, columns))
        return counts


class DrawScratch:
    """Memory for PoissonBits.draw, allocated once per resampling call instead of arrays of a chunk's size made
    afresh for every chunk. Alone (one thread) this measured no gain; inside compare(), whose benchmarks run in two
    threads, `benchmarks/stats.py --samples 4` measured F1 avg@4 1.2-1.3x faster than dfa778e with it (four runs)
    and 1.0-1.1x without (two runs), at load 4-7; fresh large arrays get fresh zeroed pages, which the two threads of
    one process fault in while contending for its memory map (our reading, not measured apart)."""

    def __init__(self, cells: int) -> None:
        lookups = -(-cells // 2)
        self.index = np.empty(lookups, dtype=np.intp)
        self.pairs = np.empty(lookups + 1, dtype=np.uint16)  # a pair's two bytes: an odd count's last pair is whole
        self.counts = np.empty(cells)


def _byte_pairs(pairs: np.ndarray) -> np.ndarray:
    """Complex pairs a + bj of small counts as uint16 codes whose bytes in memory are a, then b (any byte order)."""
    return np.ascontiguousarray(np.column_stack([pairs.real, pairs.imag]).astype(np.uint8)).view(np.uint16).ravel()


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
    with one_blas_thread():
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


def grouped_sign_flip_sums(
    sizes: np.ndarray, counts: np.ndarray, n_permutations: int, rng: np.random.Generator
) -> np.ndarray:
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


# Byte-table lookups gathered at once: their indices and values (256 KB) stay in a core's L2 cache.
LOOKUP_CELLS = 1 << 14
# unpackbits order: bit k of a byte (k = 0 the most significant) is example 8j + k of byte j.
_BYTE_BITS = ((np.arange(256)[:, None] >> (7 - np.arange(8))) & 1).astype(float)


def dense_sign_flip_sums(values: np.ndarray, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Sums Σ ±v_i of one row of differences, each example with its own random sign.

    Signs come as random bytes b; the permuted sum is Σ (2b − 1)·v = 2·b·v − Σ v, and b·v is summed a byte at a
    time from a table of the 256 partial sums of each 8 examples, one lookup per 8 examples. The bytes are drawn a
    chunk at a time, their lookups a few rows at a time into buffers kept for the whole call (LOOKUP_CELLS): the
    indices and values of a whole chunk (16 MB) went through memory, which cost a third more time (3.06 against
    2.30 CPU s for the seven benchmarks of benchmarks/stats.py --samples 4, F1).
    """
    n = values.size
    n_bytes = (n + 7) // 8
    padded = np.zeros(n_bytes * 8)
    padded[:n] = values
    table = (padded.reshape(n_bytes, 8) @ _BYTE_BITS.T).ravel()  # [byte j, value b] → Σ of the examples b selects
    offsets = np.arange(n_bytes, dtype=np.intp) * 256
    rows = max(1, LOOKUP_CELLS // n_bytes)
    index, looked_up = np.empty((rows, n_bytes), dtype=np.intp), np.empty((rows, n_bytes))
    out = np.empty(n_permutations)
    for start, m in _chunks(n_permutations, n_bytes):
        packed = rng.integers(0, 256, size=(m, n_bytes), dtype=np.uint8)
        for first in range(0, m, rows):
            k = min(rows, m - first)
            np.add(packed[first : first + k], offsets, out=index[:k])
            np.take(table, index[:k], out=looked_up[:k])
            looked_up[:k].sum(axis=1, out=out[start + first : start + first + k])  # each row summed as a whole
    return 2.0 * out - float(values.sum())


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


def randomization_pvalue(permuted: np.ndarray, observed: np.ndarray, mid_p: bool = False) -> np.ndarray:
    """Two-sided p-value of approximate randomization: p = (c + 1) / (R + 1), c = #{|d_r| ≥ |d|} (scipy's ≥).

    `mid_p`: ties with the observed statistic (the observed one included) count half, (g + (e + 1)/2) / (R + 1)
    with g = #{|d_r| > |d|} and e = #{|d_r| = |d|}: Lancaster's mid-p, which undoes the conservatism of a discrete
    statistic (0/1 scores: a sign test on the discordant examples) and equals p where no permutation ties."""
    permuted = np.atleast_2d(permuted)
    observed = np.atleast_1d(np.asarray(observed, dtype=float))
    size, tolerance = np.abs(observed), _tolerance(observed)
    extreme = (np.abs(permuted) >= size - tolerance).sum(axis=0)
    if not mid_p:
        return (extreme + 1.0) / (permuted.shape[0] + 1.0)
    ties = (np.abs(np.abs(permuted) - size) <= tolerance).sum(axis=0)
    return (extreme - ties + (ties + 1.0) / 2.0) / (permuted.shape[0] + 1.0)


def one_sided_randomization_pvalue(permuted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """One-sided p-value of approximate randomization, alternative 'greater': p = (c + 1) / (R + 1), c = #{d_r ≥ d}."""
    permuted = np.atleast_2d(permuted)
    observed = np.atleast_1d(np.asarray(observed, dtype=float))
    extreme = (permuted >= observed - _tolerance(observed)).sum(axis=0)
    return (extreme + 1.0) / (permuted.shape[0] + 1.0)


def _tolerance(observed: np.ndarray) -> np.ndarray:
    # Means of the same numbers summed in another order differ in the last bits; ties must still count as ties.
    return 1e-9 * np.maximum(1.0, np.abs(observed))
