import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, RingOverflowError

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=6), elements=finite), st.integers(0, 30))
def test_round_trip_within_half_resolution(x, frac_bits):
    codec = FixedPointCodec(frac_bits)
    if np.max(np.abs(x), initial=0) >= codec.max_abs(1):
        return
    decoded = codec.decode(codec.encode(x))
    # rounding to nearest: error at most half a step (plus float64 rounding of large values)
    bound = 2.0 ** -(frac_bits + 1) + np.abs(x) * 2.0**-52
    assert np.all(np.abs(decoded - x) <= bound)


def test_encoding_rounds_to_nearest_not_truncates():
    codec = FixedPointCodec(2)  # resolution 0.25
    values = np.array([0.2, -0.2, 0.13, -0.13, 0.37, -0.37])
    assert codec.decode(codec.encode(values)).tolist() == [0.25, -0.25, 0.25, -0.25, 0.25, -0.25]


def test_negative_values_decode_exactly():
    codec = FixedPointCodec(20)
    x = np.array([-1.0, -0.5, -1e6, -(2.0**-20)])
    assert np.array_equal(codec.decode(codec.encode(x)), x)


@given(st.integers(1, 1000))
def test_range_check_accounts_for_number_of_summands(m):
    codec = FixedPointCodec(20)
    limit = codec.max_abs(m)
    codec.encode(np.array([limit * 0.999]), n_summands=m)  # fits
    with pytest.raises(RingOverflowError, match=rf"{m} summand"):
        codec.encode(np.array([limit * 1.001]), n_summands=m)


@given(st.integers(2, 50), st.floats(0, 0.999))
def test_sum_of_admissible_values_never_wraps(m, fraction):
    codec = FixedPointCodec(20)
    value = np.array([codec.max_abs(m) * fraction])
    encoded = codec.encode(value, n_summands=m)
    total = sum((encoded for _ in range(m)), np.zeros(1, np.uint64))
    # exact in the ring: m times the (rounded) encoding, no wrap-around
    assert codec.decode(total)[0] == m * codec.decode(encoded)[0]
    assert codec.decode(total)[0] >= 0


def test_overflow_message_names_value_and_limit():
    with pytest.raises(RingOverflowError) as info:
        FixedPointCodec(20).encode(np.array([1e13]), n_summands=3, name="column sums")
    message = str(info.value)
    assert "column sums" in message and "1e+13" in message and "2.93" in message


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_rejected(bad):
    with pytest.raises(InputValidationError, match="non-finite"):
        FixedPointCodec().encode(np.array([1.0, bad]))


@pytest.mark.parametrize("frac_bits", [-1, 53, 2.5, True])
def test_bad_frac_bits(frac_bits):
    with pytest.raises(InputValidationError, match="frac_bits"):
        FixedPointCodec(frac_bits)


def test_decode_rejects_wrong_dtype():
    with pytest.raises(InputValidationError, match="uint64"):
        FixedPointCodec().decode(np.zeros(3, dtype=np.int64))
