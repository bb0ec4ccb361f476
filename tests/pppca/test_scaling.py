"""Column exponents (mpc_pca.pppca.scaling): what a provider publishes and what the parties agree."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mpc_pca.pppca.scaling import ZERO_COLUMN, agree_exponents, column_exponents, provider_exponents
from protocols.errors import InputValidationError


def test_a_zero_column_at_one_provider_bounds_nothing():
    small = np.array([[0.03, 5.0], [-0.06, 1.0]])  # column 0 peaks at 0.06 < 2^-4
    zero = np.array([[0.0, 2.0]])
    published = [provider_exponents(small).tolist(), provider_exponents(zero).tolist()]
    assert published == [[-4, 3], [ZERO_COLUMN, 2]]
    assert agree_exponents(published) == (-4, 3)


def test_a_column_zero_at_every_provider_is_agreed_as_zero():
    parts = [np.array([[0.0, 1.5]]), np.array([[0.0, -0.2], [0.0, 0.1]])]
    assert agree_exponents([provider_exponents(p).tolist() for p in parts]) == (0, 1)


@given(
    data=arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(1, 4)),
                elements=st.sampled_from([0.0, 1e-300, -3e-7, 0.25, 0.5, 1.0, 7.0, -1e9])),
    cut=st.integers(1, 11),
)  # fmt: skip
def test_agreement_over_any_split_equals_the_pooled_exponents(data, cut):
    cut = min(cut, data.shape[0] - 1)
    parts = [data[:cut], data[cut:]]
    agreed = agree_exponents([provider_exponents(p).tolist() for p in parts])
    assert agreed == tuple(column_exponents(data).tolist())
    peaks = np.max(np.abs(data), axis=0)
    nonzero = peaks > 0
    # the exponent is tight: 2^(e-1) <= max |x| < 2^e
    assert np.all(peaks[nonzero] < np.ldexp(1.0, np.array(agreed)[nonzero]))
    assert np.all(peaks[nonzero] >= np.ldexp(1.0, np.array(agreed)[nonzero] - 1))


@pytest.mark.parametrize("value", [1025, -1074, 10**30, ZERO_COLUMN + 1])
def test_exponents_outside_float64_are_refused_naming_the_provider(value):
    with pytest.raises(
        InputValidationError, match=rf"provider1 published column exponents \[{value}\] outside"
    ):
        agree_exponents([[0, 1], [0, value]])


def test_the_float64_extremes_are_accepted():
    assert agree_exponents([[1024, -1073], [ZERO_COLUMN, ZERO_COLUMN]]) == (1024, -1073)


def test_exponent_lists_of_different_lengths_are_refused_naming_each_provider():
    from mpc_pca.pppca.scaling import agree_exponents
    from protocols.errors import InputValidationError

    with pytest.raises(InputValidationError, match=r"different lengths: \{'provider0': 0, 'provider1': 2\}"):
        agree_exponents([[], [1, 2]])
