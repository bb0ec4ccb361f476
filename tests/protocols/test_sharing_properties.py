"""Additive sharing over Z_2^64: any memory layout of the secret, and reconstruction's contract.

Covers :func:`protocols.sharing.split_seeded` / :func:`protocols.sharing.split` on
secrets that are not C-contiguous (Fortran order, transposed or strided views, with
and without ``overwrite``), and :func:`protocols.sharing.reconstruct` returning
fresh ``uint64`` ring elements without touching its inputs, wrapping modulo 2^64,
and refusing no shares or shares of different shapes with a message naming them.
"""

import numpy as np
import pytest

from protocols.errors import InputValidationError
from protocols.sharing import expand_share, reconstruct, split, split_seeded

RING = 2**64


def secret_matrix():
    return np.arange(1, 13, dtype=np.uint64).reshape(3, 4) * np.uint64(0x9E3779B97F4A7C15)


@pytest.mark.parametrize(
    "layout",
    [np.asfortranarray, lambda s: s.T, lambda s: s[:, ::2], lambda s: s[::-1]],
    ids=["fortran", "transposed", "strided", "reversed"],
)
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_non_c_contiguous_secret_is_shared_and_reconstructed(layout, overwrite):
    secret = layout(secret_matrix())
    assert not secret.flags.c_contiguous
    expected = secret.copy()
    kept, seeds = split_seeded(secret, 3, overwrite=overwrite)
    assert kept.shape == secret.shape and kept.flags.c_contiguous
    assert np.array_equal(secret, expected)  # a layout it cannot overwrite is copied, not changed
    shares = [expand_share(seed, secret.shape) for seed in seeds]
    assert np.array_equal(reconstruct([*shares, kept]), expected)


def test_split_of_a_fortran_ordered_secret_reconstructs():
    secret = np.asfortranarray(secret_matrix())
    shares = split(secret, 4)
    assert np.array_equal(reconstruct(shares), secret)


def test_reconstruct_does_not_modify_the_shares_it_is_given():
    shares = [np.array([1, 2, 3], dtype=np.uint64), np.array([10, 20, 30], dtype=np.uint64)]
    before = [s.copy() for s in shares]
    total = reconstruct(shares)
    assert total.tolist() == [11, 22, 33]
    assert all(np.array_equal(s, b) for s, b in zip(shares, before, strict=True))
    assert not np.shares_memory(total, shares[0])
    single = reconstruct(shares[:1])
    assert single.tolist() == [1, 2, 3] and single is not shares[0]


def test_reconstruct_wraps_modulo_2_64():
    shares = [np.array([RING - 1, RING - 5], dtype=np.uint64), np.array([3, 5], dtype=np.uint64)]
    assert reconstruct(shares).tolist() == [2, 0]


def test_reconstruct_reads_a_signed_first_share_as_ring_elements():
    # The same 64-bit words viewed as int64 (e.g. from a signed buffer) are the same ring elements.
    unsigned = np.array([RING - 1, 7], dtype=np.uint64)
    signed = unsigned.view(np.int64)
    assert signed.tolist() == [-1, 7]
    total = reconstruct([signed, np.array([2, 1], dtype=np.uint64)])
    assert total.dtype == np.uint64
    assert total.tolist() == [1, 8]


def test_reconstruct_refuses_an_empty_list_of_shares():
    with pytest.raises(InputValidationError, match=r"^reconstruct needs at least one share$"):
        reconstruct([])


def test_reconstruct_refuses_shares_of_different_shapes_naming_both():
    shares = [np.zeros((2, 3), np.uint64), np.zeros((2, 3), np.uint64), np.zeros((3, 2), np.uint64)]
    with pytest.raises(InputValidationError, match=r"^share shapes differ: \(3, 2\) vs \(2, 3\)$"):
        reconstruct(shares)
