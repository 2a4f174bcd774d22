"""Search-P1's soft outcome decays only partial matches: "applies a decay factor of 0.5 to partial matches when
incorrect answers have high-quality reasoning paths" (seeds/002 line 114). An exact match scores 1, a partial match
(token F1 > 0 without an exact match) 0.5 · (F1 + r_path) / 2, an answer sharing no token with a gold 0."""

from __future__ import annotations

import pytest

from evalsuite.methods.search_p1.reward import SearchP1Reward

GOLDS = ["Tim Burton"]


@pytest.mark.parametrize(
    ("answer", "path", "expected"),
    [
        ("Tim Burton", 0.0, (1.0, 1.0, 1.0)),  # exact: 1 whatever the path
        # "Burton": precision 1/1, recall 1/2 -> F1 2/3; 0.5 · (2/3 + 1) / 2 = 5/12
        ("Burton", 1.0, (0.0, 2 / 3, 5 / 12)),
        # "Burton" with a path of 0.4: 0.5 · (2/3 + 0.4) / 2 = 4/15
        ("Burton", 0.4, (0.0, 2 / 3, 4 / 15)),
        # same tokens, other order: F1 1 but no exact match, still a partial match: 0.5 · (1 + 0.5) / 2
        ("Burton Tim", 0.5, (0.0, 1.0, 0.375)),
        # no common token: nothing to decay, even with a perfect path
        ("Steven Spielberg", 1.0, (0.0, 0.0, 0.0)),
        (None, 1.0, (0.0, 0.0, 0.0)),  # no answer at all
    ],
)
def test_soft_outcome_on_hand_computed_answers(answer, path, expected):
    assert SearchP1Reward().soft_outcome(answer, GOLDS, path) == pytest.approx(expected)


def test_the_decay_setting_scales_only_partial_matches():
    reward = SearchP1Reward(SearchP1Reward.config_class(decay=0.2))
    assert reward.soft_outcome("Burton", GOLDS, 1.0)[2] == pytest.approx(0.2 * (2 / 3 + 1) / 2)
    assert reward.soft_outcome("Spielberg", GOLDS, 1.0)[2] == 0.0
    assert reward.soft_outcome("tim burton", GOLDS, 0.0)[2] == 1.0  # SQuAD normalization: an exact match
