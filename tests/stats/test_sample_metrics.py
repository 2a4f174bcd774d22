"""Metrics over K samples per question (evalsuite.metrics.samples), against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsuite.metrics.registry import get_metric, is_registered
from evalsuite.metrics.samples import avg_at_k, maj_at_k, pass_at_k, pass_ks, sample_spread


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
    # a tie scores the tied answers' mean, whichever came first (ties once went to the first seen: 0.0 here)
    assert maj_at_k(["london", "paris", "london", "paris"], [0.0, 1.0, 0.0, 1.0]) == 0.5
    assert maj_at_k(["paris", "london", "paris", "london"], [1.0, 0.0, 1.0, 0.0]) == 0.5
    assert maj_at_k(["a", "b", "c", "a", "b"], [0.0, 1.0, 0.0, 0.0, 1.0]) == 0.5  # a and b tie at 2; c is not in it
    assert maj_at_k(["a", "b", "c"], [1.0, 0.0, 0.0]) == pytest.approx(1 / 3)
    assert maj_at_k([None, None], [0.0, 0.0]) == 0.0
    assert maj_at_k([None, "x", None], [0.0, 0.4, 0.0]) == 0.4


def test_spread_is_the_sd_of_a_one_sample_run_from_each_questions_variance():
    scores = np.array([[1, 0], [1, 1], [0, 0]], dtype=float)  # variances 1/2, 0, 0: sqrt((1/6) / 3)
    assert sample_spread(scores) == pytest.approx(math.sqrt(1 / 18))
    # here equal to the sd of the two per-sample run means (2/3 and 1/3), which it estimates without reading labels
    assert sample_spread(scores) == pytest.approx(np.std([2 / 3, 1 / 3], ddof=1))
    assert sample_spread(np.array([[1, 0], [0, 1]], dtype=float)) == pytest.approx(math.sqrt(0.5 / 2))
    assert sample_spread(np.array([[1, 0, np.nan], [1, 1, 0]])) == pytest.approx(math.sqrt((0.5 + 1 / 3) / 2 / 2))
    assert sample_spread(np.ones((3, 1))) == 0.0


def test_pass_columns_cover_one_powers_of_two_and_k():
    assert pass_ks(1) == [1] and pass_ks(4) == [1, 2, 4] and pass_ks(6) == [1, 2, 4, 6]


def test_sample_metrics_are_declared_from_their_metric():
    assert get_metric("em_avg").interval == "cluster_wilson" and get_metric("em_avg").kind == "continuous"
    # maj@K of EM is in [0, 1] since a tie scores the tied answers' mean: no longer 0/1, so no McNemar
    assert get_metric("em_maj").kind == "continuous" and get_metric("em_maj").test == "randomization"
    assert get_metric("em_maj").interval == "effective_wilson"
    assert get_metric("em_pass@4").label == "EM pass@4"
    assert get_metric("n_searches_avg").kind == "count" and get_metric("n_searches_avg").interval == "bootstrap"
    assert not is_registered("f1_pass@2")  # pass@k needs a 0/1 metric
    assert not is_registered("nonsense_avg")
    # aggregates declared per metric: no maj@K of a count or a stop reason, no pass@k of a stop reason
    assert not is_registered("completion_tokens_maj") and not is_registered("n_searches_maj")
    assert not is_registered("stop_error_pass@2") and not is_registered("stop_error_maj")
    assert is_registered("stop_error_avg") and is_registered("retrieval_hit_pass@2")
    assert not is_registered("retrieval_hit_maj")


def test_a_sampled_run_holds_only_the_aggregates_each_metric_declares():
    from evalsuite.runs import ExampleRecord, summarize

    records = [ExampleRecord(id=q, task="nq", question="?", golden_answers=["a"], prediction="a", sample=j,
                             sample_seed=j, metrics={"em": 1.0, "stop_error": 0.0, "completion_tokens": 30.0 + j,
                                                     "retrieval_hit": 1.0, "novel_queries": 2.0})
               for q in ("q0", "q1") for j in range(2)]
    names = set(summarize(records).tasks["nq"].metrics)
    assert names == {"em_avg", "em_maj", "em_pass@1", "em_pass@2", "stop_error_avg", "completion_tokens_avg",
                     "retrieval_hit_avg", "retrieval_hit_pass@1", "retrieval_hit_pass@2", "novel_queries_avg"}
