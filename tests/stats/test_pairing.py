import numpy as np
import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.stats import align_by_id, aligned_matrix


def test_pairs_scores_in_the_first_systems_id_order():
    ids, a, b = align_by_id({"q1": 1.0, "q2": 0.0, "q3": 1.0}, {"q3": 0.0, "q1": 1.0, "q2": 1.0})
    assert ids == ["q1", "q2", "q3"]
    assert a.tolist() == [1.0, 0.0, 1.0]
    assert b.tolist() == [1.0, 1.0, 0.0]


def test_mismatched_example_sets_name_missing_and_extra_ids():
    with pytest.raises(EvalsuiteError) as info:
        align_by_id({"q1": 1, "q2": 0, "q3": 1}, {"q1": 1, "q2": 0, "q9": 1}, names=("base", "new"), where="bamboogle")
    message = info.value.message
    assert message.startswith("bamboogle: cannot pair 'new' with 'base'")
    assert "1 id(s) of 'base' missing from 'new': q3" in message
    assert "1 id(s) of 'new' not in 'base': q9" in message


def test_a_subset_is_also_a_mismatch():
    with pytest.raises(EvalsuiteError, match="missing from 'B': q2"):
        align_by_id({"q1": 1.0, "q2": 0.0}, {"q1": 1.0})


def test_long_differences_are_abbreviated():
    base = {f"q{i:02d}": 1.0 for i in range(20)}
    with pytest.raises(EvalsuiteError, match=r"20 id\(s\) .* q00, q01, q02, q03, q04 and 15 more"):
        aligned_matrix({"base": base, "other": {}})


def test_matrix_rows_follow_the_mapping_order():
    ids, matrix = aligned_matrix({"a": {"x": 1.0, "y": 2.0}, "b": {"y": 4.0, "x": 3.0}, "c": {"x": 5.0, "y": 6.0}})
    assert ids == ["x", "y"]
    np.testing.assert_array_equal(matrix, [[1, 2], [3, 4], [5, 6]])
