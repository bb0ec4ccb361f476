"""The extension's local bit work: the transpose, the PRG and the tweakable hash."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.ot.matrix import ROWS, expand, expand_all, hash_rows, transpose


@pytest.mark.parametrize("width", [1, 2, 37, 1000])
def test_transpose_puts_bit_i_of_ot_j_at_row_j(width):
    columns = np.random.default_rng(width).integers(0, 256, size=(ROWS, width), dtype=np.uint8)
    rows = transpose(columns)
    assert rows.shape == (8 * width, ROWS // 8)
    bits = np.unpackbits(columns, axis=1)  # bits[i, j]: bit i of OT j
    assert np.array_equal(np.unpackbits(rows, axis=1), bits.T)


def test_the_prg_depends_on_key_and_batch_and_is_deterministic():
    key, other = bytes(range(16)), bytes(range(1, 17))
    first = expand(key, 0, 4096)
    assert np.array_equal(first, expand(key, 0, 4096))
    assert np.array_equal(expand(key, 0, 100), first[:100])
    for different in (expand(key, 1, 4096), expand(other, 0, 4096)):
        assert np.mean(different == first) < 0.02  # about 1/256 of bytes agree by chance
    assert expand_all((key, other), 3, 64).shape == (2, 64)


def test_the_hash_depends_on_the_row_and_on_the_tweak():
    rows = np.zeros((4, 16), dtype=np.uint8)
    rows[1, 15] = 1  # one bit apart from row 0
    rows[3] = rows[2]
    out = hash_rows(rows, 0)
    assert out.dtype == np.uint64 and out.shape == (4,)
    assert out[0] != out[1]  # the inputs differ
    assert out[2] != out[3]  # equal inputs, different tweaks (2 and 3)
    assert out[0] != out[2]  # equal inputs (row 0 and row 2), tweaks 0 and 2
    assert np.array_equal(hash_rows(rows[2:], 2), out[2:])  # the tweak is the absolute index
