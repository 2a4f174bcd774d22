"""Query quality from a judge panel (Progress Table 3): completeness, granularity, majority vote and Fleiss' kappa.

A verdict table has one row per judged item (a question for completeness, a query for granularity) and one
column per judge; a cell is True, False or None (the judge's reply could not be parsed: never guessed, left out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from evalsuite.errors import require

VerdictRow = Sequence[bool | None]


class QualityScore(BaseModel):
    """A panel metric: the score, each judge's score, the majority-vote score and inter-judge agreement."""

    score: float | None
    per_judge: dict[str, float | None]
    majority: float | None
    fleiss_kappa: float | None
    n_items: int
    n_verdicts: int
    n_unparseable: int
    n_kappa_items: int


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _majority(row: VerdictRow) -> bool | None:
    yes, no = sum(v is True for v in row), sum(v is False for v in row)
    return None if yes == no else yes > no


def binary_counts(rows: Sequence[VerdictRow]) -> np.ndarray:
    """Fleiss' subject-by-category table (columns: False, True) of the rows every judge answered."""
    complete = [row for row in rows if row and all(v is not None for v in row)]
    return np.array(
        [[sum(v is False for v in row), sum(v is True for v in row)] for row in complete], dtype=float
    ).reshape(-1, 2)


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' kappa of a subjects-by-categories count table (statsmodels);
    None if undefined (e.g. all raters agree on one category everywhere)."""
    inter_rater = require(
        "statsmodels.stats.inter_rater",
        "stats",
        "Fleiss' kappa",
        hint="pip install 'evalsuite[stats]' (the [judge] extra includes it too)",
    )
    counts = np.asarray(counts, dtype=float)
    if counts.shape[0] == 0 or counts.sum(axis=1).min() < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(inter_rater.fleiss_kappa(counts, method="fleiss"))
    return None if math.isnan(value) or math.isinf(value) else value


def _check(rows: Sequence[VerdictRow], judges: Sequence[str]) -> None:
    for index, row in enumerate(rows):
        if len(row) != len(judges):
            raise ValueError(f"verdict row {index} has {len(row)} cells for {len(judges)} judges")


def completeness(rows: Sequence[VerdictRow], judges: Sequence[str]) -> QualityScore:
    """Per question the mean over judges' booleans, then the mean over questions (Progress §4)."""
    _check(rows, judges)
    sample_means = [_mean([float(v) for v in row if v is not None]) for row in rows]
    per_judge = {name: _mean([float(v) for row in rows if (v := row[j]) is not None]) for j, name in enumerate(judges)}
    majorities = [_majority(row) for row in rows]
    return QualityScore(
        score=_mean([m for m in sample_means if m is not None]),
        per_judge=per_judge,
        majority=_mean([float(m) for m in majorities if m is not None]),
        fleiss_kappa=fleiss_kappa(binary_counts(rows)) if len(judges) > 1 else None,
        n_items=len(rows),
        n_verdicts=sum(v is not None for row in rows for v in row),
        n_unparseable=sum(v is None for row in rows for v in row),
        n_kappa_items=len(binary_counts(rows)),
    )


def granularity(rows: Sequence[VerdictRow], judges: Sequence[str]) -> QualityScore:
    """Micro-average of every judge's boolean over every query (Progress §4); per judge the same over its verdicts."""
    _check(rows, judges)
    verdicts = [float(v) for row in rows for v in row if v is not None]
    per_judge = {name: _mean([float(v) for row in rows if (v := row[j]) is not None]) for j, name in enumerate(judges)}
    majorities = [_majority(row) for row in rows]
    return QualityScore(
        score=_mean(verdicts),
        per_judge=per_judge,
        majority=_mean([float(m) for m in majorities if m is not None]),
        fleiss_kappa=fleiss_kappa(binary_counts(rows)) if len(judges) > 1 else None,
        n_items=len(rows),
        n_verdicts=len(verdicts),
        n_unparseable=sum(v is None for row in rows for v in row),
        n_kappa_items=len(binary_counts(rows)),
    )
