import numpy as np
import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.stats import align_by_id, mcnemar_exact
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with; without it the whole file is skipped, naming the extra
mcnemar = import_extra("stats", "statsmodels.stats.contingency_tables").mcnemar


def test_three_discordant_pairs_all_one_way():
    # b = 3, c = 0: p = 2 * P(X <= 0), X ~ Binom(3, 1/2) = 2/8
    result = mcnemar_exact(np.array([1, 1, 1, 0, 1]), np.array([0, 0, 0, 0, 1]))
    assert (result.only_a, result.only_b, result.n) == (3, 0, 5)
    assert result.p_value == pytest.approx(0.25)


def test_balanced_discordance_gives_p_one():
    assert mcnemar_exact(np.array([1, 0, 1, 0]), np.array([0, 1, 0, 1])).p_value == 1.0


def test_identical_systems_give_p_one():
    a = np.array([1, 0, 1, 1, 0])
    assert mcnemar_exact(a, a).p_value == 1.0


def test_rejects_continuous_scores():
    with pytest.raises(EvalsuiteError, match="0/1 scores"):
        mcnemar_exact(np.array([0.5, 1.0]), np.array([0.0, 1.0]))


def test_matches_statsmodels_on_bamboogle_base_vs_instruct(bamboogle_pair):
    base, instruct = bamboogle_pair
    _, a, b = align_by_id(instruct, base)
    ours = mcnemar_exact(a, b)
    table = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))], [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]
    reference = mcnemar(table, exact=True)
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-12)
    # the instruct checkpoint answers 43 of 125 exactly, the base 11 (FlashRAG's recorded em)
    assert (a.sum(), b.sum()) == (43, 11)
    assert reference.pvalue < 1e-6
    assert (ours.only_a, ours.only_b) == (table[0][1], table[1][0])


def test_mid_p_mcnemar_is_twice_the_lower_tail_less_the_point_probability():
    """Fagerland, Lydersen and Laake (2013): mid-p = 2·P(X ≤ m) − P(X = m), X ~ Binom(b + c, ½), m = min(b, c)."""
    from scipy.stats import binom

    from evalsuite.stats.significance import mcnemar_pvalues

    for b, c in ((3, 0), (10, 4), (5, 5), (20, 31), (0, 7)):
        m, n = min(b, c), b + c
        expected = min(1.0, 2 * binom.cdf(m, n, 0.5) - binom.pmf(m, n, 0.5))
        assert mcnemar_pvalues(np.array([b]), np.array([c]), mid_p=True)[0] == pytest.approx(expected)
        assert mcnemar_pvalues(np.array([b]), np.array([c]), mid_p=True)[0] <= mcnemar_pvalues(np.array([b]), np.array([c]))[0]
    assert mcnemar_pvalues(np.array([0]), np.array([0]), mid_p=True)[0] == 1.0
