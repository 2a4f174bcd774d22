import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from evalsuite.errors import EvalsuiteError
from evalsuite.stats import align_by_id, mcnemar_exact


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
