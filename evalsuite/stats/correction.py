"""Multiple-comparison correction across benchmarks."""

from __future__ import annotations

import numpy as np


def holm(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaNs stay NaN and do not count.

    Reject hypothesis i at level α when its adjusted p-value is ≤ α; matches statsmodels' multipletests(method='holm').
    """
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return adjusted
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted
