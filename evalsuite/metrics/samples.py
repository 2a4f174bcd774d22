"""Metrics over K sampled trajectories per question: avg@K, pass@k (Chen et al., 2021), maj@K and the spread.

A sampled run holds K records per question (sample 0..K−1). Each per-sample metric m (EM, F1, ...) gives, per
question, one value of each derived metric, named after m (evalsuite.metrics.registry.sample_metric declares them):

- `m_avg`: the mean of m over the question's samples (avg@K);
- `m_pass@k`: for a 0/1 metric, the unbiased estimate of "at least one of k samples is right" from c right out of
  K, 1 − C(K − c, k) / C(K, k) (Chen et al., 2021, eq. 1), for any k ≤ K;
- `m_maj`: m of the majority answer, the most frequent normalized answer among the samples that answered (ties: the
  answer whose first sample comes first), maj@K;

and the run's spread is the standard deviation, across the K sample indices, of the mean of m over questions (how
much one sampled run's score moves from one sample to the next). A greedy run is K = 1: avg, maj and pass@1 equal m.

Questions are the unit of every interval and test downstream (evalsuite.stats): each question contributes one
value of each derived metric, so K samples are never counted as K independent questions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy.special import comb


def avg_at_k(scores: np.ndarray) -> np.ndarray:
    """(questions × K) per-sample scores → each question's mean over its samples (NaN samples, not yet run, skipped)."""
    return np.nanmean(np.atleast_2d(np.asarray(scores, dtype=float)), axis=1)


def pass_at_k(n_samples: np.ndarray | int, n_correct: np.ndarray | int, k: int) -> np.ndarray:
    """Unbiased pass@k per question from c correct of n samples: 1 − C(n − c, k) / C(n, k) (Chen et al., 2021).

    Needs k ≤ n; C(n − c, k) is 0 when fewer than k samples are wrong, so such a question scores 1.
    """
    n = np.asarray(n_samples, dtype=float)
    c = np.asarray(n_correct, dtype=float)
    if k < 1 or np.any(k > n):
        raise ValueError(f"pass@{k} needs 1 ≤ k ≤ the samples per question ({int(np.min(n))})")
    return 1.0 - comb(n - c, k) / comb(n, k)


def majority_index(answers: Sequence[str | None]) -> int | None:
    """The sample holding the majority answer among normalized `answers` (None: no answer); ties go to the answer
    seen first; None when no sample answered."""
    given = [a for a in answers if a is not None]
    if not given:
        return None
    counts = Counter(given)
    top = max(counts.values())
    winner = next(a for a in given if counts[a] == top)
    return answers.index(winner)


def maj_at_k(answers: Sequence[str | None], scores: Sequence[float] | np.ndarray) -> float:
    """The score of the majority answer of one question's samples; 0 when no sample answered."""
    index = majority_index(answers)
    return 0.0 if index is None else float(scores[index])


def sample_spread(scores: np.ndarray) -> float:
    """Standard deviation (ddof 1) across sample indices of the mean over questions; 0 for one sample."""
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    if scores.shape[1] < 2:
        return 0.0
    return float(np.std(np.nanmean(scores, axis=0), ddof=1))


def pass_ks(k_max: int) -> list[int]:
    """The k of the pass@k columns a run of K samples records: 1, the powers of two below K, and K."""
    ks = {1, k_max}
    power = 2
    while power < k_max:
        ks.add(power)
        power *= 2
    return sorted(ks)
