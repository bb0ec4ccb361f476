import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from protocols.errors import WireFormatError
from protocols.transport.wire import decode_message, encode_message

dtypes = st.sampled_from([np.uint8, np.int32, np.int64, np.uint64, np.float32, np.float64, np.complex128])
arrays = dtypes.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**3000), max_value=2**3000),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=40),
    arrays,
)
messages = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def assert_same(a, b):
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    else:
        assert a == b and type(a) is type(b)


@given(messages)
def test_round_trip(message):
    assert_same(message, decode_message(encode_message(message)))


@given(messages, st.data())
def test_truncated_messages_are_rejected(message, data):
    raw = encode_message(message)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(WireFormatError):
        decode_message(raw[:cut])


@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_wire_errors(raw):
    with contextlib.suppress(WireFormatError):
        decode_message(raw)


def test_trailing_bytes_rejected():
    with pytest.raises(WireFormatError, match="trailing"):
        decode_message(encode_message([1, 2]) + b"N")


def test_object_and_structured_dtypes_refused_both_ways():
    with pytest.raises(TypeError, match="dtype"):
        encode_message(np.array([object()]))
    raw = bytearray(encode_message(np.zeros(2, dtype=np.int64)))
    index = raw.index(b"<i8")
    raw[index : index + 3] = b"|O8"
    with pytest.raises(WireFormatError):
        decode_message(bytes(raw))


def test_array_payload_must_match_header():
    import struct

    raw = encode_message(np.zeros((2, 2), dtype=np.float64))
    header = b"A" + bytes([3]) + b"<f8" + bytes([2])
    assert raw.startswith(header)
    # claim a 3 x 2 array but carry only the 2 x 2 payload
    forged = header + struct.pack("<QQ", 3, 2) + raw[len(header) + 16 :]
    with pytest.raises(WireFormatError, match="need 48"):
        decode_message(forged)


def test_unsupported_python_objects_are_not_sent():
    with pytest.raises(TypeError, match="cannot be sent"):
        encode_message({1, 2})
    with pytest.raises(TypeError, match="keys must be str"):
        encode_message({1: 2})


def test_big_endian_arrays_arrive_equal():
    arr = np.arange(5, dtype=">i4")
    out = decode_message(encode_message(arr))
    assert np.array_equal(out, arr)


@given(messages)
def test_zero_copy_decoding_of_a_private_buffer_round_trips(message):
    assert_same(message, decode_message(bytearray(encode_message(message)), copy_arrays=False))


def test_arrays_are_aligned_writable_views_only_for_private_writable_buffers():
    message = {"a": "x", "n": 7, "arr": np.arange(10, dtype=np.uint64), "f": np.ones((2, 3))}
    raw = encode_message(message)
    buffer = bytearray(raw)
    views = decode_message(buffer, copy_arrays=False)
    base = np.frombuffer(buffer, dtype=np.uint8).ctypes.data
    for key in ("arr", "f"):
        arr = views[key]
        assert (arr.ctypes.data - base) % 8 == 0  # 8-byte aligned within the message
        assert arr.flags.writeable and np.shares_memory(arr, np.frombuffer(buffer, dtype=np.uint8))
    # read-only input, or the default: independent, writable copies
    for decoded in (decode_message(raw, copy_arrays=False), decode_message(buffer)):
        assert decoded["arr"].flags.writeable
        assert not np.shares_memory(decoded["arr"], np.frombuffer(buffer, dtype=np.uint8))


def test_padding_longer_than_alignment_is_rejected():
    raw = bytearray(encode_message(np.zeros(1, dtype=np.float64)))
    header = 1 + 1 + 3 + 1 + 8 + 8  # tag, dtype length, dtype, ndim, one dim, byte count
    assert raw[header] < 8
    raw[header] = 9
    with pytest.raises(WireFormatError, match="padding"):
        decode_message(bytes(raw))


@given(messages, st.data())
def test_corrupted_encodings_only_raise_wire_errors(message, data):
    """Valid messages with bytes overwritten, inserted or cut: decoding never raises anything else."""
    raw = bytearray(encode_message(message))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        patch = data.draw(st.binary(min_size=1, max_size=9))
        if data.draw(st.booleans()):
            raw[at : at + len(patch)] = patch
        else:
            raw[at:at] = patch
    with contextlib.suppress(WireFormatError):
        decode_message(bytes(raw))


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"A\x03<,8", "invalid array dtype"),  # a comma dtype string: numpy raised SyntaxError
        (b"A\x03<f8\x02" + (2**62).to_bytes(8, "little") + bytes(8) + bytes(8) + b"\x00", "axis of length"),
        (
            b"A\x03<f8\x01" + (10**6).to_bytes(8, "little") + (8 * 10**6).to_bytes(8, "little"),
            "axis of length",
        ),
        (b"B" + (32_000).to_bytes(8, "little") + bytes(8), "truncated"),  # announces more than it holds
        (b"I" + (2**63).to_bytes(8, "little"), "truncated"),
        (b"A\x02O8\x00", "invalid array dtype"),
    ],
)
def test_hostile_headers_are_wire_errors_before_any_allocation(raw, match):
    with pytest.raises(WireFormatError, match=match):
        decode_message(raw)
