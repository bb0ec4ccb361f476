"""Checks on what peers send (:mod:`protocols.messages`): each kills a measured surviving mutation."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import ProtocolError
from protocols.messages import expect_real_array


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_expect_real_array_refuses_non_finite_values_from_a_peer(bad, dtype):
    message = np.array([[1.0, 2.0], [bad, 4.0]], dtype=dtype)
    with pytest.raises(ProtocolError, match="'site3' sent the local mean with non-finite values"):
        expect_real_array(message, "site3", (2, 2), "the local mean")


def test_expect_real_array_accepts_finite_real_arrays_of_any_length_along_a_free_axis():
    out = expect_real_array(np.arange(6, dtype=np.int64).reshape(3, 2), "p", (None, 2))
    assert out.dtype == np.float64 and out.shape == (3, 2)
    with pytest.raises(ProtocolError, match="expected a real array of shape"):
        expect_real_array(np.ones((3, 3)), "p", (None, 2))
