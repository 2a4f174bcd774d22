"""Metrics over K samples per question (evalsuite.metrics.samples), against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsuite.metrics.registry import get_metric, is_registered
from evalsuite.metrics.samples import avg_at_k, maj_at_k, majority_index, pass_at_k, pass_ks, sample_spread


def test_avg_at_k_is_each_questions_mean_over_its_samples():
    assert avg_at_k([[1, 0, 1, 1], [0, 0, 0, 0], [0.5, 1, 0, 0.5]]).tolist() == [0.75, 0.0, 0.5]


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (4, 1, 2, 1 - 3 / 6),    # C(3,2)/C(4,2)
    (4, 2, 2, 1 - 1 / 6),    # C(2,2)/C(4,2)
    (4, 3, 2, 1.0),          # fewer than k wrong samples: every draw of 2 holds a right one
    (4, 0, 4, 0.0),
    (4, 1, 4, 1.0),
    (16, 3, 4, 1 - math.comb(13, 4) / math.comb(16, 4)),
    (10, 7, 1, 0.7),         # pass@1 is the share right
])
def test_pass_at_k_is_chen_et_al_unbiased_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    # the numerically stable product form of the Codex paper's reference code
    stable = 1.0 if n - c < k else 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))
    assert pass_at_k(n, c, k) == pytest.approx(stable, abs=1e-12)


def test_pass_at_k_is_the_chance_that_k_samples_drawn_without_replacement_hold_a_right_one():
    # brute force over every k-subset of 6 samples with 2 right
    from itertools import combinations

    right = [1, 1, 0, 0, 0, 0]
    for k in range(1, 7):
        subsets = list(combinations(range(6), k))
        share = sum(any(right[i] for i in s) for s in subsets) / len(subsets)
        assert pass_at_k(6, 2, k) == pytest.approx(share)


def test_pass_at_k_refuses_k_above_the_samples():
    with pytest.raises(ValueError, match="pass@5"):
        pass_at_k(4, 1, 5)


def test_majority_vote_over_normalized_answers():
    assert maj_at_k(["paris", "london", "paris", None], [1.0, 0.0, 1.0, 0.0]) == 1.0
    assert maj_at_k(["london", "paris", "london", "paris"], [0.0, 1.0, 0.0, 1.0]) == 0.0  # tie: first seen wins
    assert majority_index(["b", "a", "a", "b"]) == 0
    assert maj_at_k([None, None], [0.0, 0.0]) == 0.0
    assert majority_index([None, "x", None]) == 1


def test_spread_is_the_sd_of_the_per_sample_run_means():
    scores = np.array([[1, 0], [1, 1], [0, 0]], dtype=float)  # sample means 2/3 and 1/3
    assert sample_spread(scores) == pytest.approx(math.sqrt(2 * (1 / 6) ** 2))
    assert sample_spread(np.ones((3, 1))) == 0.0


def test_pass_columns_cover_one_powers_of_two_and_k():
    assert pass_ks(1) == [1] and pass_ks(4) == [1, 2, 4] and pass_ks(6) == [1, 2, 4, 6]


def test_sample_metrics_are_declared_from_their_metric():
    assert get_metric("em_avg").interval == "cluster_wilson" and get_metric("em_avg").kind == "continuous"
    assert get_metric("em_maj").kind == "binary" and get_metric("em_maj").test == "mcnemar"
    assert get_metric("em_pass@4").label == "EM pass@4"
    assert get_metric("n_searches_avg").kind == "count" and get_metric("n_searches_avg").interval == "bootstrap"
    assert not is_registered("f1_pass@2")  # pass@k needs a 0/1 metric
    assert not is_registered("nonsense_avg")
