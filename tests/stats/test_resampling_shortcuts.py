"""The fast resampling paths draw from exactly the textbook distributions.

- bootstrap_means counts draws on frequent score patterns by one multinomial draw and picks the rest by index or,
  for a large rest, by Poisson counts (UniformPicker, PoissonBits);
- binary_paired_means draws the 2×2 table's cells of 0/1 scores;
- sign_flip_means counts positive signs per difference size by popcount and flips the rest one by one.
Each is checked against the moments the textbook procedure has exactly (bootstrap: mean x̄ and covariance Σ/n with
the population covariance Σ; sign flips: mean 0 and variance Σ d²/n²) and against the textbook loop itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsuite.stats import resample

DRAWS = 40_000


def _discrete_scores(rng: np.random.Generator, n: int) -> np.ndarray:
    """Three systems' F1-like scores: mostly 0/1 shared by all (frequent patterns), some fractions (the rest)."""
    difficulty = rng.random(n)
    right = (0.4 + 0.1 * np.arange(3)[:, None] + rng.normal(0, 0.1, (3, n))) > difficulty
    partial = rng.choice([0.25, 0.4, 0.5, 2 / 3, 0.8], size=(3, n))
    return np.where(right, 1.0, np.where(rng.random((3, n)) < 0.3, partial, 0.0))


def _within(estimate: np.ndarray, expected: np.ndarray, standard_error: np.ndarray) -> bool:
    return bool(np.all(np.abs(estimate - expected) <= 4.5 * standard_error + 1e-12))


def test_pattern_count_bootstrap_has_the_bootstrap_mean_and_covariance():
    rng = np.random.default_rng(11)
    scores = _discrete_scores(rng, 400)
    _, counts = np.unique(scores.T, axis=0, return_counts=True)
    assert counts.max() >= resample.MIN_PATTERN_COUNT and (counts < resample.MIN_PATTERN_COUNT_SMALL_REST).any()  # both paths
    means = resample.bootstrap_means(scores, DRAWS, resample.stream(3, "x"))
    n = scores.shape[1]
    expected_cov = np.cov(scores, ddof=0) / n
    assert _within(means.mean(axis=0), scores.mean(axis=1), np.sqrt(np.diag(expected_cov) / DRAWS))
    observed_cov = np.cov(means.T)
    # the variance of a sample covariance of normal-ish draws: (σ_ij² + σ_ii σ_jj) / DRAWS
    se = np.sqrt((expected_cov**2 + np.outer(np.diag(expected_cov), np.diag(expected_cov))) / DRAWS)
    assert _within(observed_cov, expected_cov, se)


def test_pattern_count_bootstrap_matches_the_index_bootstrap_in_distribution():
    rng = np.random.default_rng(12)
    scores = _discrete_scores(rng, 300)
    fast = resample.bootstrap_means(scores, 20_000, resample.stream(1, "x"))
    index = resample.stream(2, "y").integers(0, 300, size=(20_000, 300))
    textbook = np.stack([scores[j][index].mean(axis=1) for j in range(3)], axis=1)
    for j in range(3):
        assert scipy_stats.ks_2samp(fast[:, j], textbook[:, j]).pvalue > 1e-3
    diff_fast, diff_textbook = fast[:, 2] - fast[:, 0], textbook[:, 2] - textbook[:, 0]
    assert scipy_stats.ks_2samp(diff_fast, diff_textbook).pvalue > 1e-3


def test_binary_table_draws_match_the_index_bootstrap():
    rng = np.random.default_rng(13)
    base = (rng.random(125) < 0.1).astype(float)
    system = np.where(rng.random(125) < 0.2, 1.0 - base, base)
    means, diffs = resample.binary_paired_means(np.vstack([base, system]), DRAWS, 5, "bamboogle")
    index = resample.stream(6, "z").integers(0, 125, size=(DRAWS, 125))
    textbook = system[index].mean(axis=1) - base[index].mean(axis=1)
    # compare counts on the 1/125 lattice: the two ways of computing a mean round differently in the last bit
    assert scipy_stats.ks_2samp(np.round(diffs[:, 0] * 125), np.round(textbook * 125)).pvalue > 1e-3
    assert _within(np.var(diffs[:, 0]), np.var(system - base) / 125, np.var(system - base) / 125 * np.sqrt(2 / DRAWS))
    for row, values in ((0, base), (1, system)):  # each system's own bootstrap mean
        assert _within(means[:, row].mean(), values.mean(), np.sqrt(np.var(values) / 125 / DRAWS))
        assert _within(means[:, row].var(), np.var(values) / 125, np.var(values) / 125 * np.sqrt(2 / DRAWS))


@pytest.mark.parametrize("n_repeated", [0, 40, 500])
def test_sign_flips_have_mean_zero_and_variance_sum_of_squares(n_repeated):
    rng = np.random.default_rng(14)
    # differences with a few sizes shared by many examples (popcount path) and unique ones (byte-table path)
    d = np.concatenate([rng.choice([1.0, -1.0, 0.5, -0.5], n_repeated), rng.normal(0, 0.3, 60), np.zeros(30)])
    flips = resample.sign_flip_means(d[None, :], DRAWS, 7, "t")[:, 0]
    n = d.size
    variance = np.sum(d**2) / n**2
    assert _within(flips.mean(), 0.0, np.sqrt(variance / DRAWS))
    assert _within(flips.var(), variance, variance * np.sqrt(2 / DRAWS))
    textbook = (rng.choice([-1.0, 1.0], size=(DRAWS, n)) * d).mean(axis=1)
    assert scipy_stats.ks_2samp(flips, textbook).pvalue > 1e-3


def test_grouped_and_byte_table_sums_equal_the_loop_over_the_same_random_bits():
    # one size shared by 70 examples (64 + 6 bits: the last word masked) and one by 3
    sizes, counts = np.array([0.5, 2.0]), np.array([70, 3])
    sums = resample.grouped_sign_flip_sums(sizes, counts, 500, resample.stream(0, "g"))
    words = resample.stream(0, "g").integers(0, np.iinfo(np.uint64).max, size=(500, 3), dtype=np.uint64, endpoint=True)
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").reshape(500, 3, 64)
    positives_a = bits[:, 0].sum(axis=1).astype(int) + bits[:, 1, :6].sum(axis=1)
    positives_b = bits[:, 2, :3].sum(axis=1).astype(int)
    assert np.allclose(sums, 0.5 * (2 * positives_a - 70) + 2.0 * (2 * positives_b - 3))
    values = np.arange(1.0, 14.0)  # 13 values: two bytes, the second padded
    dense = resample.dense_sign_flip_sums(values, 500, resample.stream(0, "d"))
    packed = resample.stream(0, "d").integers(0, 256, size=(500, 2), dtype=np.uint8)
    signs = 2.0 * np.unpackbits(packed, axis=1, count=13) - 1.0
    assert np.allclose(dense, signs @ values)


# The Poisson-count picks: sets of at least POISSON_MIN_ROWS rows draw how often each row is picked.


def test_poisson_bits_give_each_pair_of_counts_its_exact_probability():
    # every 16-bit pattern's pair, plus the double-resolved leftover share, sums to P(a)·P(b) for every pair
    lam = 0.93
    bits = resample.PoissonBits.of(lam)
    pairs = bits.leftover_pairs
    table_share = np.array([np.count_nonzero(bits.table[: bits.leftover_from] == pair) for pair in pairs]) / 65536
    leftover = 1 - bits.leftover_from / 65536
    fractions = np.diff(np.concatenate([[0.0], bits.leftover_edges])) / bits.leftover_edges[-1]
    pmf = scipy_stats.poisson.pmf(np.arange(24), lam)
    expected = np.outer(pmf, pmf).ravel()
    assert np.allclose(table_share + leftover * fractions, expected, rtol=0, atol=1e-15)
    assert np.array_equal(pairs.real.astype(int), np.repeat(np.arange(24), 24))


def test_poisson_bits_draw_independent_poisson_counts():
    lam = 0.97
    counts = resample.PoissonBits.of(lam).draw(400, 5_001, resample.stream(8, "p"))  # odd: a pair spans two rows
    assert counts.shape == (400, 5_001)
    values, observed = np.unique(counts, return_counts=True)
    expected = scipy_stats.poisson.pmf(values, lam) * counts.size
    keep = expected > 20
    chi2 = np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep])
    assert scipy_stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3, (values, observed, expected)
    flat = counts.ravel()  # the two counts of one lookup, and neighbouring rows, are independent
    for lag in (1, 2, 5_001):
        assert abs(np.corrcoef(flat[:-lag], flat[lag:])[0, 1]) < 4.5 / np.sqrt(flat.size)


def _pick_counts(picker: resample.UniformPicker, picks: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """How often each row was picked, through the sums of an identity matrix of values."""
    return picker.sums(picks, resample.stream(seed, "counts"))[:, :rows]


@pytest.mark.parametrize("picks_below_mean", [0, 60], ids=["usual", "many-redraws"])
def test_poisson_picks_are_multinomial_counts(picks_below_mean):
    # picks 60 below their mean: T exceeds them in about a quarter of the rows, which draw again
    rows, draws = 1_200, 4_000
    picker = resample.UniformPicker(np.eye(rows), n=2 * rows)
    assert picker.poisson is not None
    picks = np.full(draws, rows - picks_below_mean)
    counts = np.vstack([_pick_counts(picker, picks[:1_000], rows, seed) for seed in range(draws // 1_000)])
    assert np.array_equal(counts.sum(axis=1), picks)  # exactly picks[b] picks in every row
    k = picks[0]
    p = 1 / rows
    # Multinomial(k, 1/rows): each count Binomial(k, p), two counts covary by −k·p² (independent Poisson: 0)
    assert _within(counts.mean(), k * p, np.sqrt(k * p * (1 - p) / counts.size) * 3)
    assert _within(counts.var(), k * p * (1 - p), k * p * np.sqrt(2 / counts.size) * 3)
    left, right = counts[:, :600].sum(axis=1), counts[:, 600:].sum(axis=1)
    halves_cov = np.cov(left, right)[0, 1]  # Binomial halves of k: covariance −k/4
    assert _within(halves_cov, -k / 4, k / 4 * np.sqrt(2 / draws))


def test_poisson_picks_of_rows_wanting_few_picks_fall_back_to_index_picks():
    # Poisson counts of 1,100 rows almost never total 0 or 5: those rows are drawn by index after a few tries
    picker = resample.UniformPicker(np.eye(1_100), n=2_200)
    counts = _pick_counts(picker, np.array([0, 5, 1_100, 1_100]), 1_100, seed=3)
    assert counts.sum(axis=1).tolist() == [0, 5, 1_100, 1_100]
    assert counts.min() >= 0


def test_poisson_picks_match_index_picks_in_distribution():
    rng = np.random.default_rng(15)
    rows = 1_500
    values = np.column_stack([rng.random(rows), rng.choice([0.0, 0.5, 1.0], rows)])
    picker = resample.UniformPicker(values, n=3_000)
    picks = rng.binomial(3_000, 0.5, size=4_000)
    fast = picker.sums(picks, resample.stream(1, "f"))
    index = resample.index_pick_sums(values, picks, resample.stream(2, "i"))
    for j in range(2):
        assert scipy_stats.ks_2samp(fast[:, j] - picks * values[:, j].mean(), index[:, j] - picks * values[:, j].mean()).pvalue > 1e-3


def test_bootstrap_of_many_distinct_scores_has_the_bootstrap_mean_and_covariance():
    # 2,500 examples whose patterns are nearly all distinct: the rest is resampled by Poisson counts
    rng = np.random.default_rng(16)
    scores = np.where(rng.random((3, 2_500)) < 0.5, rng.random((3, 2_500)), np.round(rng.random((3, 2_500))))
    means = resample.bootstrap_means(scores, 20_000, resample.stream(4, "x"))
    n = scores.shape[1]
    expected_cov = np.cov(scores, ddof=0) / n
    assert _within(means.mean(axis=0), scores.mean(axis=1), np.sqrt(np.diag(expected_cov) / 20_000))
    se = np.sqrt((expected_cov**2 + np.outer(np.diag(expected_cov), np.diag(expected_cov))) / 20_000)
    assert _within(np.cov(means.T), expected_cov, se)
    index = rng.integers(0, n, size=(5_000, n))
    textbook = np.stack([scores[j][index].mean(axis=1) for j in range(3)], axis=1)
    assert scipy_stats.ks_2samp(means[:, 2] - means[:, 0], textbook[:, 2] - textbook[:, 0]).pvalue > 1e-3


def test_bootstrap_means_are_reproducible_from_the_seed():
    scores = np.random.default_rng(17).random((2, 3_000))
    first = resample.bootstrap_means(scores, 300, resample.stream(5, "t"))
    assert np.array_equal(first, resample.bootstrap_means(scores, 300, resample.stream(5, "t")))
    assert not np.array_equal(first, resample.bootstrap_means(scores, 300, resample.stream(6, "t")))


def test_score_patterns_equal_numpy_unique_columns():
    rng = np.random.default_rng(18)
    few = rng.choice([0.0, 0.25, 1.0], size=(4, 500))
    many = rng.integers(0, 400, size=(8, 600)) / 400  # 400⁸ numbers overflow the mixed radix: np.unique path
    for scores in (few, many):
        patterns, inverse, counts = resample.score_patterns(scores)
        expected, expected_inverse, expected_counts = np.unique(scores.T, axis=0, return_inverse=True, return_counts=True)
        assert np.array_equal(patterns, expected) and np.array_equal(counts, expected_counts)
        assert np.array_equal(inverse, expected_inverse.ravel())
        assert np.array_equal(patterns[inverse].T, scores)


def test_one_blas_thread_is_reentrant_and_restores_the_limit():
    from threadpoolctl import threadpool_info

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    before = blas_threads()
    with resample.one_blas_thread():
        with resample.one_blas_thread():
            assert blas_threads() <= {1}
        assert blas_threads() <= {1}  # the inner exit keeps the limit while the outer caller is inside
    assert blas_threads() == before


# The kernels' faster layouts (byte-coded Poisson pairs; byte-table lookups a few rows at a time) must change no
# number: the same seed gives, to the last bit, what the plain one-step versions below give.


def test_poisson_bits_draw_the_counts_of_the_complex_pair_table_to_the_last_bit():
    for lam, rows, columns in ((0.93, 400, 5_001), (0.5, 3, 1_025), (0.99, 1, 1)):
        bits = resample.PoissonBits.of(lam)
        rng = resample.stream(8, "p")
        lookups = -(-rows * columns // 2)
        raw = rng.bit_generator.random_raw(-(-lookups // 4)).view(np.uint16)[:lookups]
        pairs = np.take(bits.table, raw)
        leftover = np.flatnonzero(raw >= bits.leftover_from)
        u = rng.random(leftover.size) * bits.leftover_edges[-1]
        which = np.minimum(np.searchsorted(bits.leftover_edges, u, side="right"), bits.leftover_pairs.size - 1)
        pairs[leftover] = bits.leftover_pairs[which]
        plain = pairs.view(float)[: rows * columns].reshape(rows, columns)
        assert np.array_equal(bits.draw(rows, columns, resample.stream(8, "p")), plain)


@pytest.mark.parametrize("n", [13, 3_000, 140_000])  # one byte row within LOOKUP_CELLS, many, and more than it
def test_byte_table_sums_equal_one_whole_chunk_lookup_to_the_last_bit(n):
    values = np.random.default_rng(n).normal(size=n)
    permutations = 1_500 if n < 100_000 else 20
    rng = resample.stream(1, "d")
    n_bytes = (n + 7) // 8
    padded = np.concatenate([values, np.zeros(n_bytes * 8 - n)])
    table = (padded.reshape(n_bytes, 8) @ resample._BYTE_BITS.T).ravel()
    offsets = np.arange(n_bytes) * 256
    plain = np.concatenate([2.0 * table[rng.integers(0, 256, size=(m, n_bytes), dtype=np.uint8) + offsets].sum(axis=1)
                            for _, m in resample._chunks(permutations, n_bytes)]) - float(values.sum())
    assert np.array_equal(resample.dense_sign_flip_sums(values, permutations, resample.stream(1, "d")), plain)
