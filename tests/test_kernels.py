"""The kernels' sorting helpers against plain numpy references (lexsort, first occurrence)."""

import numpy as np
import pytest

from rag_eval.metrics.kernels import sort_desc_within_groups


def _reference(groups: np.ndarray, values: np.ndarray):
    order = np.lexsort((-values, groups))
    return groups[order], values[order]


@pytest.mark.parametrize(
    "values",
    [
        np.array([1.0, 3.0, 2.0, 3.0, 1.0, 7.0, 15.0, 0.5]),  # a fraction: the general path
        np.array([1.0, 3.0, 2.0, 3.0, 1.0, 7.0, 15.0, 4.0]),  # whole numbers: the grade is the rank
        np.array([-2.0, 3.0, 0.0, 3.0, 1.0, 2**21, 1.0, 4.0]),  # whole, but too wide a span
        np.array([1e-300, 3.0, 2.0, 3.0, 1.0, 7.0, 15.0, 4.0]),
    ],
)
def test_sort_desc_within_groups_matches_lexsort(values):
    groups = np.array([2, 0, 1, 0, 2, 1, 0, 2])
    got_groups, got_values = sort_desc_within_groups(groups, values, n_groups=3)
    want_groups, want_values = _reference(groups, values)
    np.testing.assert_array_equal(got_groups, want_groups)
    np.testing.assert_array_equal(got_values, want_values)
    assert got_groups.dtype == np.int64 and got_values.dtype == np.float64


def test_sort_desc_within_groups_random_whole_and_fractional_grades():
    rng = np.random.default_rng(7)
    for fractional in (False, True):
        groups = rng.integers(0, 50, size=2000)
        values = rng.integers(1, 6, size=2000).astype(float)
        if fractional:
            values[::7] += 0.25
        got = sort_desc_within_groups(groups, values, n_groups=50)
        want = _reference(groups, values)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
