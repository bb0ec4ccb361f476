"""Peer-message checks: what a refusal says, and what an accepted real array is.

Covers :func:`protocols.messages.expect_array` refusing a non-array or an array of
another dtype with an error that names the sender, what arrived and what was agreed,
and :func:`protocols.messages.expect_real_array` handing back the received float64
array itself (no copy of a possibly large message) while converting integer arrays.
"""

import numpy as np
import pytest

from protocols.errors import ProtocolError
from protocols.messages import expect_array, expect_array_list, expect_real_array


@pytest.mark.parametrize(
    ("message", "type_name"),
    [([1, 2], "list"), ((1, 2), "tuple"), (b"\x00" * 8, "bytes"), (None, "NoneType")],
)
def test_non_array_message_is_refused_naming_sender_and_what_arrived(message, type_name):
    with pytest.raises(ProtocolError, match=rf"^expected an array from 'p0', got {type_name}$"):
        expect_array(message, sender="p0", shape=None, dtype=np.uint64)


def test_array_of_another_dtype_is_refused_naming_agreed_and_received_dtype():
    with pytest.raises(ProtocolError, match=r"^expected dtype uint64 from 'p3', got float64$"):
        expect_array(np.zeros(3), sender="p3", shape=(3,), dtype=np.uint64)
    with pytest.raises(ProtocolError, match=r"^expected dtype int32 from 'p3', got int64$"):
        expect_array(np.zeros(3, np.int64), sender="p3", shape=(3,), dtype="int32")


def test_array_list_reports_a_wrong_dtype_inside_the_list_with_the_sender():
    message = [np.zeros(2, np.uint64), np.zeros(2, np.int64)]
    with pytest.raises(ProtocolError, match=r"^expected dtype uint64 from 'p4', got int64$"):
        expect_array_list(message, sender="p4", shapes=[(2,), (2,)], dtype=np.uint64)


def test_accepted_array_is_returned_unchanged():
    message = np.arange(4, dtype=np.uint64).reshape(2, 2)
    assert expect_array(message, sender="p0", shape=(2, 2), dtype=np.uint64) is message
    assert expect_array(message, sender="p0", shape=None, dtype=np.uint64) is message


def test_real_float64_message_is_returned_without_a_copy():
    message = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    out = expect_real_array(message, "site0", (2, None), "the mean")
    assert out is message


def test_real_integer_message_is_converted_to_a_fresh_float64_array():
    message = np.array([[1, -2], [3, 4]], dtype=np.int32)
    out = expect_real_array(message, "site0", (2, 2))
    assert out.dtype == np.float64
    assert out.tolist() == [[1.0, -2.0], [3.0, 4.0]]
    assert not np.shares_memory(out, message)
