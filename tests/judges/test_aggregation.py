"""Panel aggregation pinned to hand-computed verdict tables (Progress Table 3 conventions) and Fleiss' textbook example."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.judges.panel import majority_vote
from evalsuite.metrics.query_quality import binary_counts, completeness, fleiss_kappa, granularity
from tests.conftest import requires_extra

# evalsuite's Fleiss' kappa, which the panel summaries report, runs on statsmodels (the [stats] extra)
FLEISS = requires_extra("stats", "statsmodels")

T, F, N = True, False, None


@FLEISS
def test_completeness_is_the_mean_over_samples_of_the_mean_over_parsed_judges() -> None:
    rows = [[T, T, F], [T, N, F], [N, N, N], [T, T, T]]
    score = completeness(rows, ["a", "b", "c"])
    # per sample 2/3, 1/2, (no parsed verdict: left out), 1  ->  (2/3 + 1/2 + 1) / 3 = 13/18
    assert score.score == pytest.approx(13 / 18)
    assert score.per_judge == pytest.approx({"a": 1.0, "b": 1.0, "c": 1 / 3})
    # majority: T, tie (None), None, T -> 2 decided items, both True
    assert score.majority == pytest.approx(1.0)
    assert (score.n_items, score.n_verdicts, score.n_unparseable, score.n_kappa_items) == (4, 8, 4, 2)
    # kappa over the two fully parsed rows: counts (F,T) = (1,2), (0,3); P = (1/3 + 1)/2 = 2/3, Pe = 26/36 -> -1/5
    assert score.fleiss_kappa == pytest.approx(-0.2)


@FLEISS
def test_granularity_is_the_micro_average_over_all_query_verdicts() -> None:
    rows = [[T, F], [T, T], [F, N], [T, T]]
    score = granularity(rows, ["a", "b"])
    assert score.score == pytest.approx(5 / 7)  # 5 True among 7 parsed verdicts, not the mean of per-judge rates
    assert score.per_judge == pytest.approx({"a": 3 / 4, "b": 2 / 3})
    assert score.majority == pytest.approx(2 / 3)  # tie, T, F (the only parsed vote), T
    assert score.n_unparseable == 1


@FLEISS
def test_fleiss_kappa_on_a_binary_table_computed_by_hand() -> None:
    rows = [[T, T, T], [T, T, F], [F, F, F], [T, F, F]]
    assert binary_counts(rows).tolist() == [[0, 3], [1, 2], [3, 0], [2, 1]]
    # P_i = 1, 1/3, 1, 1/3 -> mean 2/3; p(T) = p(F) = 1/2 -> Pe = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert fleiss_kappa(binary_counts(rows)) == pytest.approx(1 / 3)


@FLEISS
def test_fleiss_kappa_textbook_example() -> None:
    # Fleiss (1971) as tabulated on Wikipedia: 10 subjects, 14 raters, 5 categories; kappa = 0.210
    table = np.array([
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ])
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=5e-5)


@FLEISS
def test_fleiss_kappa_is_undefined_when_every_verdict_is_the_same() -> None:
    assert fleiss_kappa(binary_counts([[T, T], [T, T]])) is None
    assert completeness([[T], [F]], ["only"]).fleiss_kappa is None  # one judge: no agreement to measure


def test_majority_vote_needs_a_strict_majority_of_parsed_verdicts() -> None:
    assert majority_vote([T, T, F]) is True
    assert majority_vote([F, N, N]) is False
    assert majority_vote([T, F, N]) is None
    assert majority_vote([N, N, N]) is None


def test_rows_must_have_one_cell_per_judge() -> None:
    with pytest.raises(ValueError, match="row 1 has 1 cells for 2 judges"):
        granularity([[T, T], [T]], ["a", "b"])
