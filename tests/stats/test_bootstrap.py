import numpy as np
import pytest

from evalsuite.stats import align_by_id, paired_bootstrap, stratified_bootstrap
from evalsuite.stats.resample import stream


def _naive_paired_bootstrap(a, b, n_resamples, seed, key, confidence=0.95):
    """The textbook loop, drawing the same indices as the vectorized code (one draw of B·n int32 for small inputs)."""
    n = len(a)
    indices = stream(seed, key).integers(0, n, size=(n_resamples, n), dtype=np.int32)
    diffs = []
    for row in indices:
        diffs.append(sum(a[i] for i in row) / n - sum(b[i] for i in row) / n)
    diffs = np.array(diffs)
    observed = np.mean(a) - np.mean(b)
    c = sum(1 for d in diffs if abs(d - observed) >= abs(observed) - 1e-9)
    tail = (1 - confidence) / 2
    return np.quantile(diffs, tail), np.quantile(diffs, 1 - tail), (c + 1) / (n_resamples + 1)


def test_matches_a_naive_loop_with_the_same_draws(bamboogle_pair):
    base, instruct = bamboogle_pair
    _, a, b = align_by_id(instruct, base)
    result = paired_bootstrap(a, b, n_resamples=2000, seed=4, key="bamboogle")
    low, high, p = _naive_paired_bootstrap(a, b, 2000, 4, "bamboogle")
    assert result.difference == pytest.approx((43 - 11) / 125)
    assert (result.ci_low, result.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert result.p_value == pytest.approx(p)
    assert result.ci_low > 0 and result.p_value < 0.001


def test_constant_shift_has_a_point_interval_and_the_minimum_p():
    # every example gains 0.1, so every resample's difference is 0.1: c = 0 and p = 1 / (B + 1)
    b = np.linspace(0, 0.8, 40)
    result = paired_bootstrap(b + 0.1, b, n_resamples=999)
    assert (result.ci_low, result.ci_high) == (pytest.approx(0.1), pytest.approx(0.1))
    assert result.p_value == pytest.approx(1 / 1000)
    assert result.n_resamples == 999 and result.confidence == 0.95


def test_identical_systems_are_never_significant():
    a = np.array([1.0, 0.0, 1.0, 1.0])
    result = paired_bootstrap(a, a.copy(), n_resamples=500)
    assert (result.difference, result.ci_low, result.ci_high, result.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_interval_covers_the_normal_approximation_on_large_samples():
    rng = np.random.default_rng(2)
    a, b = rng.random(4000), rng.random(4000)
    result = paired_bootstrap(a, b, n_resamples=4000, seed=9)
    half = 1.96 * np.std(a - b, ddof=1) / np.sqrt(4000)
    assert result.ci_high - result.ci_low == pytest.approx(2 * half, rel=0.05)


def test_stratified_bootstrap_averages_per_benchmark_shifts():
    # task x gains 0.1 on every example, task y 0.3: the macro-average difference is 0.2 in every resample
    x, y = np.linspace(0, 0.5, 30), np.linspace(0, 0.6, 125)
    result = stratified_bootstrap({"x": (x + 0.1, x), "y": (y + 0.3, y)}, n_resamples=500)
    assert result.difference == pytest.approx(0.2)
    assert (result.ci_low, result.ci_high) == (pytest.approx(0.2), pytest.approx(0.2))
    assert result.n == 155 and result.test == "stratified-bootstrap"


def test_stratified_bootstrap_keeps_each_benchmark_weight():
    # One benchmark of 20 and one of 2000: a macro-average CI is dominated by the small one, a pooled one would not be.
    rng = np.random.default_rng(3)
    small = (rng.random(20) < 0.5).astype(float), (rng.random(20) < 0.5).astype(float)
    large = (rng.random(2000) < 0.5).astype(float), (rng.random(2000) < 0.5).astype(float)
    result = stratified_bootstrap({"small": small, "large": large}, n_resamples=4000, seed=1)
    sd_small = np.std(small[0] - small[1], ddof=1) / np.sqrt(20)
    sd_large = np.std(large[0] - large[1], ddof=1) / np.sqrt(2000)
    expected_half = 1.96 * np.sqrt(sd_small**2 + sd_large**2) / 2
    assert (result.ci_high - result.ci_low) / 2 == pytest.approx(expected_half, rel=0.12)
