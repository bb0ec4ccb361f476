"""Contracts of the fixed-point codec (``protocols.encoding``) beyond the round trip.

Covered properties:

* defaults a caller relies on without passing them: ``frac_bits=20``, one summand,
  and the name ``value`` in error messages;
* the limits are exact: ``frac_bits=52`` is accepted and 53 refused, and a value
  sitting exactly at ``max_abs(m)`` is refused (its encoding would be ``2^63``,
  which wraps to ``-2^63``) while the next float below it is accepted;
* error messages name the offending value, where it is, the limit and the remedy;
* arrays larger than one in-place cast block encode every entry correctly
  (checked against Python's exact integer rounding);
* the input dtype does not matter: float16, float32, integer and boolean inputs
  encode to the ring elements of their float64 values.
"""

import numpy as np
import pytest

from protocols.encoding import FixedPointCodec, check_finite
from protocols.errors import InputValidationError, RingOverflowError

RING = 2**64


def exact_encoding(x, frac_bits):
    """Oracle: round-half-even of ``x * 2^f`` in Python integers, reduced mod 2^64."""
    scale = 2**frac_bits
    return [round(v * scale) % RING for v in np.asarray(x, dtype=np.float64).ravel().tolist()]


def test_default_codec_has_twenty_fractional_bits():
    codec = FixedPointCodec()
    assert codec.frac_bits == 20
    assert codec.resolution == 2.0**-20
    assert repr(codec) == "FixedPointCodec(frac_bits=20)"
    assert codec.encode([1.0]).tolist() == [2**20]


def test_default_number_of_summands_is_one():
    codec = FixedPointCodec(20)
    assert codec.max_abs() == codec.max_abs(1) == 2.0**43
    value = np.array([0.75 * 2.0**43])  # fits one summand, not two
    codec.check_range(value)
    assert codec.encode(value).tolist() == exact_encoding(value, 20)
    with pytest.raises(RingOverflowError, match=r"with 2 summand\(s\)"):
        codec.encode(value, n_summands=2)


def test_frac_bits_52_is_the_largest_accepted_and_round_trips():
    codec = FixedPointCodec(52)
    values = np.array([1.0, -0.5, 1.25, 2.0**-52])
    encoded = codec.encode(values)
    assert encoded.tolist() == exact_encoding(values, 52)
    assert np.array_equal(codec.decode(encoded), values)
    assert FixedPointCodec(0).encode([2.5, 3.5]).tolist() == [2, 4]  # 0 is accepted too (half to even)


def test_frac_bits_53_is_refused_naming_value_limit_and_reason():
    with pytest.raises(InputValidationError) as info:
        FixedPointCodec(53)
    message = str(info.value)
    assert message.startswith("frac_bits=53 is out of range")
    assert message.endswith("between 0 and 52 (float64 carries 53 significant bits)")


def test_max_abs_refuses_zero_summands_naming_the_value():
    with pytest.raises(InputValidationError, match=r"^n_summands must be at least 1, got 0$"):
        FixedPointCodec().max_abs(0)


@pytest.mark.parametrize(("frac_bits", "n_summands"), [(20, 1), (20, 4), (0, 1), (40, 8)])
def test_value_exactly_at_the_limit_is_refused_and_the_float_below_accepted(frac_bits, n_summands):
    codec = FixedPointCodec(frac_bits)
    limit = codec.max_abs(n_summands)
    assert limit == 2.0 ** (63 - frac_bits) / n_summands
    for at_limit in (np.array([limit]), np.array([0.0, -limit])):
        with pytest.raises(RingOverflowError):
            codec.check_range(at_limit, n_summands)
        with pytest.raises(RingOverflowError):
            codec.encode(at_limit, n_summands=n_summands)
    below = np.array([np.nextafter(limit, 0.0), -np.nextafter(limit, 0.0)])
    encoded = codec.encode(below, n_summands=n_summands)
    assert encoded.tolist() == exact_encoding(below, frac_bits)
    # n_summands copies add up without wrapping: the sum decodes to n * value, sign intact
    total = sum((encoded for _ in range(n_summands)), np.zeros(2, np.uint64))
    assert codec.decode(total).tolist() == [n_summands * below[0], n_summands * below[1]]


def test_overflow_message_uses_default_name_and_states_limit_and_remedy():
    codec = FixedPointCodec(20)
    for call in (lambda: codec.encode([1.0, -(2.0**44)]), lambda: codec.check_range(np.array([2.0**44]))):
        with pytest.raises(RingOverflowError) as info:
            call()
        message = str(info.value)
        assert message.startswith("value has an entry of magnitude 1.75922e+13, but with 1 summand(s)")
        assert "20 fractional bits each value must stay below 8.79609e+12" in message
        assert message.endswith("cannot leave the ring Z_2^64; rescale the data or lower frac_bits")


def test_check_finite_defaults_to_the_name_value_and_gives_the_index():
    with pytest.raises(
        InputValidationError,
        match=r"^value contains a non-finite entry inf at index \(1, 0\); only finite numbers are accepted$",
    ):
        check_finite(np.array([[1.0, 2.0], [np.inf, 3.0]]))
    check_finite(np.array([0.0, -1e308]))  # finite values pass


@pytest.mark.parametrize("method", ["encode", "check_range"])
def test_non_finite_entry_is_reported_under_the_callers_name(method):
    codec = FixedPointCodec()
    x = np.array([1.0, 2.0, np.nan])
    with pytest.raises(
        InputValidationError, match=r"^weights contains a non-finite entry nan at index \(2,\);"
    ):
        getattr(codec, method)(x, name="weights")
    with pytest.raises(
        InputValidationError, match=r"^value contains a non-finite entry -inf at index \(0,\);"
    ):
        getattr(codec, method)(np.array([-np.inf]))


@pytest.mark.parametrize("shape", [(3 * (1 << 15) + 5,), (3, 40_000)])
def test_arrays_spanning_several_cast_blocks_encode_every_entry(shape):
    rng = np.random.default_rng(20240611)
    x = rng.normal(scale=1e3, size=shape)
    x.flat[:: 1 << 14] = -0.5 - np.arange(x.flat[:: 1 << 14].size)  # exact halves and negatives throughout
    codec = FixedPointCodec(20)
    encoded = codec.encode(x)
    assert encoded.shape == shape and encoded.dtype == np.uint64
    assert encoded.ravel().tolist() == exact_encoding(x, 20)
    assert np.all(np.abs(codec.decode(encoded) - x) <= 2.0**-21)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.int64, np.bool_])
def test_input_dtype_does_not_change_the_encoding(dtype):
    values = np.array([1.5, -2.25, 0.0, 1000.0, 1.0]).astype(dtype)
    codec = FixedPointCodec(20)
    encoded = codec.encode(values)
    assert encoded.dtype == np.uint64
    assert encoded.tolist() == exact_encoding(values.astype(np.float64), 20)
    assert codec.decode(encoded).tolist() == values.astype(np.float64).tolist()
