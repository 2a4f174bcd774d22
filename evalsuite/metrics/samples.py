"""Metrics over K sampled trajectories per question: avg@K, pass@k (Chen et al., 2021), maj@K and the spread.

A sampled run holds K records per question. Each per-sample metric m (EM, F1, ...) gives, per question, one value
of each derived metric its declaration allows (evalsuite.metrics.registry: `MetricSpec.over_samples`), named after m:

- `m_avg`: the mean of m over the question's samples (avg@K);
- `m_pass@k`: for a 0/1 metric, the unbiased estimate of "at least one of k samples is right" from c right out of
  n, 1 − C(n − c, k) / C(n, k) (Chen et al., 2021, eq. 1), for any k ≤ n, computed as a sum of logarithms so that
  it stays exact to about 1e-12 at any n (the binomial coefficients themselves overflow a float past n ≈ 1030);
- `m_maj`: m of the majority answer, the most frequent normalized answer among the samples that answered, maj@K.
  When several answers are equally frequent, the expected m of an answer picked uniformly among them: a tie is
  never broken by which sample came first, since that order is a label the run (or a submitter) chooses;

and the run's spread, the standard deviation of a one-sample run's score estimated from the spread of each
question's samples. Every value here is a function of the multiset of a question's samples, never of their labels
or order (tests/stats/test_sample_order_invariance.py). A greedy run is K = 1: avg, maj and pass@1 equal m.

Questions are the unit of every interval and test downstream (evalsuite.stats): each question contributes one
value of each derived metric, so K samples are never counted as K independent questions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np


def avg_at_k(scores: np.ndarray) -> np.ndarray:
    """(questions × K) per-sample scores → each question's mean over its samples (NaN samples, not yet run, skipped)."""
    return np.nanmean(_canonical(scores), axis=1)


def _canonical(scores: np.ndarray) -> np.ndarray:
    """Each question's samples sorted (NaN last), so a float sum over them is the same for any order of samples."""
    return np.sort(np.atleast_2d(np.asarray(scores, dtype=float)), axis=1)


def _one_pass_at_k(n: int, c: int, k: int) -> float:
    """1 − C(n − c, k) / C(n, k) = 1 − ∏_{i = n − c + 1}^{n} (1 − k / i), the product summed in log space."""
    if n - c < k:  # every draw of k holds a right sample
        return 1.0
    return float(-np.expm1(np.sum(np.log1p(-k / np.arange(n - c + 1, n + 1, dtype=float)))))


def pass_at_k(n_samples: np.ndarray | int, n_correct: np.ndarray | int, k: int) -> np.ndarray:
    """Unbiased pass@k per question from c correct of n samples: 1 − C(n − c, k) / C(n, k) (Chen et al., 2021).

    Needs 1 ≤ k ≤ n and 0 ≤ c ≤ n (whole numbers); exact to about 1e-12 at any n."""
    n = np.asarray(n_samples)
    c = np.asarray(n_correct)
    if k < 1 or np.any(k > n):
        raise ValueError(f"pass@{k} needs 1 ≤ k ≤ the samples per question ({int(np.min(n))})")
    if np.any(c < 0) or np.any(c > n) or np.any(c != np.round(c)) or np.any(n != np.round(n)):
        raise ValueError("pass@k needs whole counts with 0 ≤ correct ≤ samples")
    ns, cs = np.broadcast_arrays(n.astype(np.int64), c.astype(np.int64))
    values = np.array([_one_pass_at_k(int(a), int(b), k) for a, b in zip(ns.ravel(), cs.ravel())], dtype=float)
    return values.reshape(ns.shape)


def maj_at_k(answers: Sequence[str | None], scores: Sequence[float] | np.ndarray) -> float:
    """The score of one question's majority answer: among the answers given most often (normalized; None is no
    answer), the mean over those answers of each answer's mean score. 0 when no sample answered."""
    by_answer: dict[str, list[float]] = defaultdict(list)
    for answer, score in zip(answers, scores):
        if answer is not None:
            by_answer[answer].append(float(score))
    if not by_answer:
        return 0.0
    top = max(len(held) for held in by_answer.values())
    tied = [float(np.mean(sorted(held))) for held in by_answer.values() if len(held) == top]
    return float(np.mean(sorted(tied)))  # sorted: the float sum does not depend on the order answers came in


def sample_spread(scores: np.ndarray) -> float:
    """The standard deviation of a one-sample run's mean over questions, from (questions × K) per-sample scores
    (NaN: not run): sqrt(mean_q s²_q / n), s²_q the variance (ddof 1) of question q's samples over the questions with
    two or more, n the questions. The same quantity as the sd across seeds of each seed's mean, estimated from the
    multiset of each question's samples rather than from which sample a label calls seed j; 0 for one sample."""
    scores = _canonical(scores)
    present = (~np.isnan(scores)).sum(axis=1)
    several = scores[present >= 2]
    if several.size == 0:
        return 0.0
    variances = np.nanvar(several, axis=1, ddof=1)
    return float(np.sqrt(np.mean(np.sort(variances)) / scores.shape[0]))


def pass_ks(k_max: int) -> list[int]:
    """The k of the pass@k columns a run of K samples records: 1, the powers of two below K, and K."""
    ks = {1, k_max}
    power = 2
    while power < k_max:
        ks.add(power)
        power *= 2
    return sorted(ks)
