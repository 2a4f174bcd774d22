import numpy as np
import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.stats import (
    SystemScores,
    align_by_id,
    approximate_randomization,
    compare,
    holm,
    paired_bootstrap,
    stratified_bootstrap,
)
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with; without it the whole file is skipped, naming the extra
mcnemar = import_extra("stats", "statsmodels.stats.contingency_tables").mcnemar


def _scores(values, prefix="q"):
    # zero-padded ids sort in array order: compare() pairs examples in sorted-id order
    return {f"{prefix}{i:05d}": float(v) for i, v in enumerate(values)}


def test_binary_metric_uses_mcnemar_and_the_paired_bootstrap_interval(bamboogle_pair):
    base, instruct = bamboogle_pair
    result = compare(
        [SystemScores("base", {"bamboogle": base}), SystemScores("instruct", {"bamboogle": instruct})],
        "base", n_resamples=3000, seed=8,
    )
    diff = result.differences[("instruct", "bamboogle")]
    _, a, b = align_by_id(instruct, base)
    table = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))], [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]
    assert diff.test == "mcnemar-exact"
    assert diff.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert diff.p_holm == diff.p_value  # one benchmark: nothing to correct
    assert diff.significant
    direct = paired_bootstrap(a, b, n_resamples=3000, seed=8, key="bamboogle")
    assert (diff.ci_low, diff.ci_high, diff.p_bootstrap) == (direct.ci_low, direct.ci_high, direct.p_value)
    assert diff.difference == pytest.approx(32 / 125)
    assert result.means[("base", "bamboogle")].mean == pytest.approx(11 / 125)
    assert result.means[("instruct", "bamboogle")].n == 125
    assert (result.n_resamples, result.seed) == (3000, 8)


def test_continuous_metric_uses_approximate_randomization(bamboogle_f1):
    base, instruct = bamboogle_f1
    result = compare([SystemScores("b", {"bamboogle": base}), SystemScores("i", {"bamboogle": instruct})], "b",
                     metric="f1", n_permutations=2000, seed=5)
    diff = result.differences[("i", "bamboogle")]
    _, a, b = align_by_id(instruct, base)
    direct = approximate_randomization(a, b, n_permutations=2000, seed=5, key="bamboogle")
    assert diff.test == "approximate-randomization"
    assert diff.p_value == direct.p_value
    assert diff.only_system is None


def test_holm_runs_across_benchmarks_of_each_system():
    rng = np.random.default_rng(4)
    tasks = {}
    for task, gain in (("nq", 0.0), ("hotpotqa", 0.08), ("bamboogle", 0.25)):
        base = (rng.random(300) < 0.4).astype(float)
        flip = rng.random(300) < gain
        tasks[task] = (base, np.where(flip, 1.0, base))
    systems = [SystemScores("base", {t: _scores(b) for t, (b, _) in tasks.items()}),
               SystemScores("new", {t: _scores(n) for t, (_, n) in tasks.items()})]
    result = compare(systems, "base", n_resamples=500)
    raw = [result.differences[("new", t)].p_value for t in tasks]
    expected = holm(raw)
    for task, p_adj in zip(tasks, expected):
        diff = result.differences[("new", task)]
        assert diff.p_holm == pytest.approx(p_adj)
        assert diff.significant == (p_adj <= 0.05)
    assert not result.differences[("new", "nq")].significant
    assert result.differences[("new", "bamboogle")].significant


def test_group_average_is_the_stratified_bootstrap():
    rng = np.random.default_rng(6)
    data = {"nq": (rng.random(200), rng.random(200)), "musique": (rng.random(80), rng.random(80))}
    systems = [SystemScores("base", {t: _scores(b) for t, (_, b) in data.items()}),
               SystemScores("new", {t: _scores(a) for t, (a, _) in data.items()})]
    result = compare(systems, "base", metric="f1", groups={"all": ["nq", "musique"]}, n_resamples=1000, seed=2)
    avg = result.average_differences[("new", "all")]
    direct = stratified_bootstrap(data, n_resamples=1000, seed=2)
    assert (avg.difference, avg.ci_low, avg.ci_high, avg.p_value) == pytest.approx(
        (direct.difference, direct.ci_low, direct.ci_high, direct.p_value))
    assert result.averages[("new", "all")].mean == pytest.approx((data["nq"][0].mean() + data["musique"][0].mean()) / 2)
    assert avg.test == "stratified-bootstrap" and avg.p_holm is None


def test_mismatched_ids_name_the_task():
    systems = [SystemScores("base", {"nq": {"a": 1.0, "b": 0.0}}), SystemScores("new", {"nq": {"a": 1.0, "c": 0.0}})]
    with pytest.raises(EvalsuiteError, match=r"^nq: cannot pair 'new' with 'base'.*missing from 'new': b"):
        compare(systems, "base")


def test_task_without_the_baseline_gets_means_but_no_test():
    systems = [SystemScores("base", {"nq": {"a": 1.0}}), SystemScores("new", {"nq": {"a": 0.0}, "popqa": {"x": 1.0, "y": 0.0}})]
    result = compare(systems, "base", n_resamples=200)
    assert result.means[("new", "popqa")].mean == 0.5
    assert ("new", "popqa") not in result.differences
    assert any("popqa" in note for note in result.notes)


def test_unknown_baseline_and_duplicate_names_are_errors():
    systems = [SystemScores("a", {"nq": {"q": 1.0}})]
    with pytest.raises(EvalsuiteError, match="baseline 'b'"):
        compare(systems, "b")
    with pytest.raises(EvalsuiteError, match="unique"):
        compare(systems + systems, "a")
