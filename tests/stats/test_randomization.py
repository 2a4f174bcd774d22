import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsuite.stats import align_by_id, approximate_randomization


def _scipy_paired_exact(a: np.ndarray, b: np.ndarray) -> float:
    """scipy's paired permutation test of |mean(a - b)|, enumerating every swap pattern (2**n ≤ n_resamples)."""
    result = scipy_stats.permutation_test(
        (a, b), lambda x, y: abs(np.mean(x - y)), permutation_type="samples", alternative="greater", n_resamples=100_000
    )
    return float(result.pvalue)


def test_three_equal_gains_hand_computed():
    # differences 1, 1, 1: only the two patterns with all signs equal reach |mean| = 1, so p = 2/8
    result = approximate_randomization(np.array([1.0, 1.0, 1.0]), np.zeros(3), n_permutations=40_000, seed=1)
    assert result.difference == 1.0
    assert result.p_value == pytest.approx(0.25, abs=0.01)
    assert result.n_permutations == 40_000 and result.seed == 1


def test_matches_scipy_permutation_test_on_small_f1_samples():
    rng = np.random.default_rng(7)
    a = rng.random(12)
    b = np.clip(a - 0.15 + rng.normal(0, 0.2, 12), 0, 1)
    exact = _scipy_paired_exact(a, b)
    ours = approximate_randomization(a, b, n_permutations=100_000, seed=3)
    # Monte-Carlo error of p at 100k permutations is below 0.002
    assert ours.p_value == pytest.approx(exact, abs=0.006)


def test_matches_scipy_on_real_bamboogle_f1(bamboogle_f1):
    base, instruct = bamboogle_f1
    _, a, b = align_by_id(instruct, base)
    keep = np.flatnonzero(a != b)[:14]  # scipy enumerates all 2**14 swap patterns of these examples exactly
    exact = _scipy_paired_exact(a[keep], b[keep])
    ours = approximate_randomization(a[keep], b[keep], n_permutations=100_000, seed=5)
    assert ours.p_value == pytest.approx(exact, abs=0.006)


def test_p_value_has_plus_one_floor():
    # a huge, consistent gain: no permutation reaches it, so p = 1 / (R + 1)
    result = approximate_randomization(np.ones(200), np.zeros(200), n_permutations=999)
    assert result.p_value == pytest.approx(1 / 1000)


def test_same_seed_same_p_and_different_seed_differs():
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    first = approximate_randomization(a, b, n_permutations=2000, seed=11)
    assert approximate_randomization(a, b, n_permutations=2000, seed=11).p_value == first.p_value
    assert approximate_randomization(a, b, n_permutations=2000, seed=12).p_value != first.p_value


def test_mid_p_counts_ties_half_and_changes_nothing_without_ties():
    from evalsuite.stats.resample import randomization_pvalue

    permuted = np.array([[0.1], [-0.3], [0.3], [0.5], [-0.2]])
    # |d| = 0.3: 3 permutations at least as extreme (0.3, 0.3, 0.5), 2 of them ties: exact (3 + 1)/6, mid-p (1 + 3/2)/6
    assert randomization_pvalue(permuted, np.array([0.3]))[0] == pytest.approx(4 / 6)
    assert randomization_pvalue(permuted, np.array([0.3]), mid_p=True)[0] == pytest.approx(2.5 / 6)
    assert randomization_pvalue(permuted, np.array([0.25]), mid_p=True)[0] == pytest.approx(
        randomization_pvalue(permuted, np.array([0.25]))[0] - 0.5 / 6)  # only the observed itself ties

def test_one_sided_randomization_counts_only_the_greater_side():
    """Four equal positive differences: 1 of the 16 sign patterns is as large (p ≈ 1/16 one-sided, 2/16 two-sided);
    the same differences negative are never significant one-sided."""
    import numpy as np

    from evalsuite.stats.significance import approximate_randomization

    a, b = np.ones(4), np.zeros(4)
    assert approximate_randomization(a, b, 20_000, alternative="greater").p_value == pytest.approx(1 / 16, abs=0.01)
    assert approximate_randomization(a, b, 20_000).p_value == pytest.approx(2 / 16, abs=0.01)
    assert approximate_randomization(b, a, 20_000, alternative="greater").p_value == 1.0
    with pytest.raises(ValueError, match="alternative"):
        approximate_randomization(a, b, 100, alternative="less")
