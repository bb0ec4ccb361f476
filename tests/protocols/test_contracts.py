"""Exact contracts of the engine's peer-message checks, packed triangles and secure-sum entry points.

Each test pins behaviour that a surviving mutant of mutmut's run changed: a
malformed peer message is refused with the sender and what arrived named, a
packed triangle keeps its dtype and checks its buffer, and a bad input to a
secure sum names the party it came from.
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_array_list, expect_real_array, expect_seed
from protocols.secure_sum import run_secure_sum
from protocols.triangle import from_upper_triangle, triangle_side, upper_triangle


def test_real_array_check_names_sender_what_and_what_arrived():
    with pytest.raises(
        ProtocolError, match=r"^'p1' sent an array as list, expected a real array of shape \(2,\)$"
    ):
        expect_real_array([1.0, 2.0], "p1", (2,))
    with pytest.raises(ProtocolError, match=r"^'p1' sent the mean as \(3,\), expected"):
        expect_real_array(np.zeros(3), "p1", (2,), "the mean")
    with pytest.raises(ProtocolError, match="as list"):
        expect_real_array(["a"], "p1", (1,))
    with pytest.raises(ProtocolError):
        expect_real_array(np.zeros(2, dtype=complex), "p1", (2,))
    out = expect_real_array(np.arange(3), "p1", (None,))
    assert out.dtype == np.float64 and out.tolist() == [0.0, 1.0, 2.0]


def test_seed_check_refuses_anything_but_bytes_of_the_size():
    assert expect_seed(bytes(range(32)), sender="dealer") == bytes(range(32))
    for bad in ("x" * 32, bytearray(32), bytes(31), [0] * 32):
        with pytest.raises(ProtocolError, match=r"^'dealer' sent a malformed seed; expected 32 bytes$"):
            expect_seed(bad, sender="dealer")


def test_array_list_check_refuses_other_containers_and_names_the_sender():
    arrays = [np.zeros(2, np.uint64), np.ones(3, np.uint64)]
    got = expect_array_list(list(arrays), sender="p2", shapes=[(2,), (3,)], dtype=np.uint64)
    assert [a.shape for a in got] == [(2,), (3,)]
    with pytest.raises(ProtocolError, match=r"^expected a list of 2 arrays from 'p2', got tuple$"):
        expect_array_list(tuple(arrays), sender="p2", shapes=[(2,), (3,)], dtype=np.uint64)
    with pytest.raises(ProtocolError, match=r"^expected a list of 2 arrays from 'p2', got 1$"):
        expect_array_list(arrays[:1], sender="p2", shapes=[(2,), (3,)], dtype=np.uint64)
    with pytest.raises(ProtocolError, match=r"^'p2' sent an array of shape \(3,\), expected \(2,\)"):
        expect_array_list(arrays[::-1], sender="p2", shapes=[(2,), (3,)], dtype=np.uint64)


def test_packed_triangle_keeps_dtype_and_checks_its_output_buffer():
    ring = np.arange(9, dtype=np.uint64).reshape(3, 3)
    packed = upper_triangle(ring)
    assert packed.dtype == np.uint64 and packed.tolist() == [0, 1, 2, 4, 5, 8]
    buffer = np.empty(6, dtype=np.uint64)
    assert upper_triangle(ring, out=buffer) is buffer
    with pytest.raises(InputValidationError, match=r"^out has shape \(5,\), expected \(6,\)$"):
        upper_triangle(ring, out=np.empty(5, dtype=np.uint64))
    with pytest.raises(InputValidationError, match=r"^packed triangle has 6 entries, expected 10 for d=4$"):
        from_upper_triangle(packed.astype(float), d=4)
    with pytest.raises(InputValidationError, match=r"^a packed triangle is 1-D, got shape \(2, 3\)$"):
        from_upper_triangle(np.zeros((2, 3)))
    assert [triangle_side(n * (n + 1) // 2) for n in (0, 1, 2, 1000, 46340)] == [0, 1, 2, 1000, 46340]
    with pytest.raises(InputValidationError, match="not d"):
        triangle_side(5)


def test_run_secure_sum_defaults_and_names_the_bad_contributor():
    total, _ = run_secure_sum({"alice": [1.5, 2.0], "bob": [0.25, -1.0]}, receiver="carol")
    np.testing.assert_allclose(total, [1.75, 1.0], atol=1e-6)
    with pytest.raises(InputValidationError, match="bob"):
        run_secure_sum({"alice": [1.0], "bob": [np.nan]}, receiver="carol")
    with pytest.raises(InputValidationError, match=r"^run_secure_sum needs at least one contributor$"):
        run_secure_sum({}, receiver="carol")
