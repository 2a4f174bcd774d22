"""What an independent audit of the statistics found (issue 30, item 7): each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.stats import SystemScores, compare
from evalsuite.stats.intervals import mean_intervals
from evalsuite.tables.layouts import Layout, _value_cell
from evalsuite.stats.compare import Estimate
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with; without it the whole file is skipped, naming the extra
multipletests = import_extra("stats", "statsmodels.stats.multitest").multipletests


def _f1_like(rng: np.random.Generator, n: int, skill: float) -> np.ndarray:
    right = rng.random(n) < skill
    partial = ~right & (rng.random(n) < 0.3)
    return np.where(right, 1.0, np.where(partial, rng.choice([0.25, 0.4, 0.5, 2 / 3], size=n), 0.0))


def _systems(order: list[str]) -> list[SystemScores]:
    rng = np.random.default_rng(11)
    made = {name: _f1_like(rng, 400, skill) for name, skill in zip("abcde", (0.3, 0.32, 0.35, 0.28, 0.4))}
    tasks = ("nq", "hotpotqa")
    return [SystemScores(name, {t: {f"{t}{i:04d}": float(v) for i, v in enumerate(np.roll(made[name], k))}
                                for k, t in enumerate(tasks)}) for name in order]


def test_f1_numbers_do_not_depend_on_the_order_of_runs():
    # Pattern keys were built in argument order, so the shared bootstrap of F1 drew other resamples per order.
    first = compare(_systems(list("abcde")), "a", metric="f1", groups={"all": ["nq", "hotpotqa"]}, n_resamples=500, n_permutations=500)
    second = compare(_systems(list("aedcb")), "a", metric="f1", groups={"all": ["nq", "hotpotqa"]}, n_resamples=500, n_permutations=500)
    assert first.differences == second.differences
    assert first.average_differences == second.average_differences
    assert first.averages == second.averages and first.means == second.means


def test_an_asymmetric_interval_is_printed_as_its_bounds():
    # 0 of 50 right: Wilson's [0, 7.13], which "0.00 ±3.57" misstated.
    (interval,) = mean_intervals("em", np.zeros(50), "nq")
    cell = _value_cell(Estimate(interval.mean, interval.low, interval.high, 50), None, "em", True)
    assert cell.text == "0.00" and cell.detail == "[0.00, 7.13]"


def test_holm_across_systems_corrects_each_benchmark_over_the_systems():
    rng = np.random.default_rng(3)
    base = (rng.random(300) < 0.4).astype(float)
    systems = [SystemScores("base", {"nq": {f"q{i:03d}": v for i, v in enumerate(base)}})]
    for name, gain in (("s1", 0.05), ("s2", 0.1), ("s3", 0.0)):
        flipped = np.where(rng.random(300) < gain, 1.0, base)
        systems.append(SystemScores(name, {"nq": {f"q{i:03d}": v for i, v in enumerate(flipped)}}))
    per_benchmark = compare(systems, "base")
    across = compare(systems, "base", correction="systems")
    raw = [per_benchmark.differences[(s, "nq")].p_value for s in ("s1", "s2", "s3")]
    # one benchmark: the default family holds one test, so nothing is corrected
    assert [per_benchmark.differences[(s, "nq")].p_holm for s in ("s1", "s2", "s3")] == raw
    expected = multipletests(raw, method="holm")[1]
    assert [across.differences[(s, "nq")].p_holm for s in ("s1", "s2", "s3")] == pytest.approx(expected)
    assert "across systems" in across.correction
