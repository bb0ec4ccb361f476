"""Packed triangles with cached row offsets, and chunked PRG accumulation."""

import numpy as np
import pytest

from protocols.errors import InputValidationError
from protocols.prg import RingPRG
from protocols.triangle import (
    from_upper_triangle,
    packed_matvec,
    row_groups,
    row_offsets,
    triangle_diagonal,
    upper_triangle,
)


@pytest.mark.parametrize("d", [1, 2, 7, 130])
def test_packing_matches_triu_indices_and_round_trips(d):
    a = np.random.default_rng(d).normal(size=(d, d))
    sym = a + a.T
    rows, cols = np.triu_indices(d)
    packed = upper_triangle(sym)
    np.testing.assert_array_equal(packed, sym[rows, cols])
    np.testing.assert_array_equal(from_upper_triangle(packed, d), sym)
    np.testing.assert_array_equal(triangle_diagonal(packed, d), np.diag(sym))


@pytest.mark.parametrize("d", [0, 1, 255, 256, 257, 700])
def test_row_groups_tile_the_triangle_in_packed_order(d):
    """Groups of rows (several at d >= 257) give exactly the per-row packing of any square matrix."""
    a = np.random.default_rng(d).normal(size=(d, d))  # not symmetric: a wrong half would show
    offsets = row_offsets(d)
    want = np.concatenate([a[i, i:] for i in range(d)]) if d else np.empty(0)
    assert upper_triangle(a).tobytes() == want.tobytes()
    covered = 0
    for start, stop, mask in row_groups(d):
        assert start == covered and mask.shape == (stop - start, d)
        assert a[start:stop][mask].tobytes() == want[offsets[start] : offsets[stop]].tobytes()
        covered = stop
    assert covered == d
    assert len(row_groups(d)) == (0 if d == 0 else 1 if d <= 256 else -(-d // (65536 // d)))


def test_row_offsets_are_cached_and_read_only():
    assert row_offsets(50) is row_offsets(50)
    with pytest.raises(ValueError):
        row_offsets(50)[0] = 1
    assert row_offsets.cache_info().maxsize is not None  # bounded


@pytest.mark.parametrize("size", [1, 7, 8191, 8192, 8193, 50_000])
def test_accumulate_is_the_same_keystream(size):
    key, nonce = bytes(range(32)), bytes(16)
    base = np.arange(size, dtype=np.uint64)
    expected = base + RingPRG(key, nonce).ring_elements(size)
    np.testing.assert_array_equal(RingPRG(key, nonce).accumulate(base.copy()), expected)
    back = RingPRG(key, nonce).accumulate(expected.copy(), subtract=True)
    np.testing.assert_array_equal(back, base)


@pytest.mark.parametrize("d", [1, 2, 5, 64, 300, 700])
def test_packed_matvec_is_the_symmetric_product(d):
    """The provider's answer check multiplies its packed scatter by a vector without SciPy's dspmv."""
    rng = np.random.default_rng(d)
    a = rng.normal(size=(d, d))
    sym = a + a.T
    x = rng.normal(size=d)
    np.testing.assert_allclose(packed_matvec(upper_triangle(sym), x), sym @ x, rtol=1e-12, atol=1e-12)


def test_packed_matvec_refuses_a_triangle_of_another_side():
    with pytest.raises(InputValidationError, match="side 3 has 6 entries"):
        packed_matvec(np.zeros(5), np.zeros(3))
