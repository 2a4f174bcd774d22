"""Paired significance tests, confidence intervals and multiple-comparison correction (docs/statistics.md).

Everything is paired by example id, vectorized over systems and resamples, seeded, and records its resample counts.
"""

from evalsuite.stats.compare import Comparison, Difference, Estimate, SystemScores, compare
from evalsuite.stats.correction import holm
from evalsuite.stats.pairing import align_by_id, aligned_matrix
from evalsuite.stats.significance import (
    BootstrapResult,
    McNemarResult,
    RandomizationResult,
    approximate_randomization,
    mcnemar_exact,
    paired_bootstrap,
    stratified_bootstrap,
)

__all__ = [
    "BootstrapResult",
    "Comparison",
    "Difference",
    "Estimate",
    "McNemarResult",
    "RandomizationResult",
    "SystemScores",
    "align_by_id",
    "aligned_matrix",
    "approximate_randomization",
    "compare",
    "holm",
    "mcnemar_exact",
    "paired_bootstrap",
    "stratified_bootstrap",
]
