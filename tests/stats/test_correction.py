import numpy as np
import pytest

from evalsuite.stats import holm
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with; without it the whole file is skipped, naming the extra
multipletests = import_extra("stats", "statsmodels.stats.multitest").multipletests


def test_hand_computed_holm():
    # sorted 0.01, 0.03, 0.04 → 3·0.01, 2·0.03, max(0.06, 1·0.04)
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_caps_at_one_and_keeps_nan():
    adjusted = holm([0.5, np.nan, 0.9])
    assert adjusted[0] == 1.0 and adjusted[2] == 1.0 and np.isnan(adjusted[1])


def test_matches_statsmodels_on_random_p_values():
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 30):
        p = rng.random(size) ** 3
        reject, corrected, _, _ = multipletests(p, alpha=0.05, method="holm")
        np.testing.assert_allclose(holm(p), corrected, rtol=1e-12)
        assert ((holm(p) <= 0.05) == reject).all()
