"""Seeded simulations: each test rejects a true null about 5% of the time, and its power grows with the effect.

With R simulated datasets the standard error of a rejection rate near 5% is sqrt(.05·.95/R): 0.34 points at
R = 4000 and 0.49 at R = 2000, so the ±1.5-point band is three standard errors or more.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.stats import approximate_randomization, paired_bootstrap
from evalsuite.stats.significance import mcnemar_pvalues

ALPHA = 0.05


def _binary_pairs(rng: np.random.Generator, n: int, effect: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Discordant counts of `size` datasets of n paired 0/1 scores; A wins a discordant pair with 0.15 + effect/2."""
    probs = [0.30, 0.15 + effect / 2, 0.15 - effect / 2, 0.40]  # both right, only A, only B, both wrong
    counts = rng.multinomial(n, probs, size=size)
    return counts[:, 1], counts[:, 2]


def _continuous_pair(rng: np.random.Generator, n: int, effect: float) -> tuple[np.ndarray, np.ndarray]:
    """F1-like scores in [0, 1]: a shared per-question difficulty plus system noise; A shifted by `effect`."""
    difficulty = rng.beta(2, 2, n)
    a = np.clip(difficulty + rng.normal(0, 0.25, n) + effect, 0, 1)
    b = np.clip(difficulty + rng.normal(0, 0.25, n), 0, 1)
    return a, b


def _rejection_rate(test, rng: np.random.Generator, n: int, effect: float, repeats: int) -> float:
    rejected = 0
    for r in range(repeats):
        a, b = _continuous_pair(rng, n, effect)
        rejected += test(a, b, r) < ALPHA
    return rejected / repeats


def _ar(a, b, r):
    return approximate_randomization(a, b, n_permutations=500, seed=r).p_value


def _bootstrap(a, b, r):
    return paired_bootstrap(a, b, n_resamples=500, seed=r).p_value


def test_mcnemar_type_one_error_is_five_percent():
    only_a, only_b = _binary_pairs(np.random.default_rng(20), n=1000, effect=0.0, size=4000)
    rate = float(np.mean(mcnemar_pvalues(only_a, only_b) < ALPHA))
    assert 0.035 <= rate <= 0.065, rate


def test_mcnemar_power_rises_with_the_effect():
    rng = np.random.default_rng(21)
    rates = [float(np.mean(mcnemar_pvalues(*_binary_pairs(rng, 500, effect, 1000)) < ALPHA)) for effect in (0.02, 0.05, 0.1)]
    assert rates[0] < rates[1] < rates[2]
    assert rates[2] > 0.9, rates


@pytest.mark.parametrize("test", [_ar, _bootstrap], ids=["approximate-randomization", "paired-bootstrap"])
def test_type_one_error_is_five_percent(test):
    rate = _rejection_rate(test, np.random.default_rng(30), n=100, effect=0.0, repeats=2000)
    assert 0.035 <= rate <= 0.065, rate


@pytest.mark.parametrize("test", [_ar, _bootstrap], ids=["approximate-randomization", "paired-bootstrap"])
def test_power_rises_with_the_effect(test):
    rng = np.random.default_rng(31)
    rates = [_rejection_rate(test, rng, n=100, effect=effect, repeats=300) for effect in (0.03, 0.08, 0.15)]
    assert rates[0] < rates[1] < rates[2]
    assert rates[2] > 0.9, rates


def test_bootstrap_type_one_error_with_poisson_counted_picks():
    # 1,100 distinct F1-like scores per dataset: every resample is drawn by Poisson counts (UniformPicker);
    # 800 datasets: a standard error of 0.77 points, so the band is three of them
    rng = np.random.default_rng(32)
    rejected = [paired_bootstrap(*_continuous_pair(rng, 1_100, 0.0), n_resamples=250, seed=r).p_value < ALPHA for r in range(800)]
    assert 0.027 <= np.mean(rejected) <= 0.073, np.mean(rejected)
