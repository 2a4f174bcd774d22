"""The interval and the paired test follow the metric's declared kind (evalsuite.metrics.registry), never the values
a run happens to hold: a continuous metric whose scores are all 0 or 1 still gets the bootstrap and randomization."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.registry import MetricSpec, register_metric, scratch_registry
from evalsuite.stats import SystemScores, compare
from evalsuite.stats.intervals import mean_intervals, method_name, wilson


def _systems(a: list[float], b: list[float]) -> list[SystemScores]:
    return [SystemScores("base", {"nq": {f"q{i}": v for i, v in enumerate(a)}}),
            SystemScores("new", {"nq": {f"q{i}": v for i, v in enumerate(b)}})]


BASE = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
NEW = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("metric", ["graded", "n_invalid"])
def test_a_non_binary_metric_with_only_0_1_scores_gets_randomization_and_the_bootstrap(metric):
    with scratch_registry():
        register_metric(MetricSpec("graded", "Graded", "continuous", lambda x: 0.0))
        result = compare(_systems(BASE, NEW), "base", metric=metric, n_resamples=500, n_permutations=500)
    assert result.differences[("new", "nq")].test == "approximate-randomization"
    assert result.interval_methods == [method_name("bootstrap")]


def test_a_binary_metric_gets_mcnemar_and_wilson():
    result = compare(_systems(BASE, NEW), "base", metric="em", n_resamples=500)
    difference = result.differences[("new", "nq")]
    assert difference.test == "mcnemar-exact" and (difference.only_system, difference.only_baseline) == (3, 0)
    low, high = wilson(np.array([3.0]), 8)
    assert (result.means[("base", "nq")].ci_low, result.means[("base", "nq")].ci_high) == pytest.approx((low[0], high[0]))


def test_a_binary_metric_holding_other_values_is_one_clear_error():
    with pytest.raises(EvalsuiteError, match="em is declared binary but nq holds scores other than 0 and 1"):
        mean_intervals("em", np.array([0.0, 0.5, 1.0]), "nq")


def test_a_metric_declared_with_mcnemar_must_be_binary():
    with pytest.raises(ValueError, match="McNemar's test needs a binary metric"):
        MetricSpec("graded", "Graded", "continuous", lambda x: 0.0, test="mcnemar")
