import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from protocols.errors import InputValidationError
from protocols.prg import RingPRG, nonce_for_counter
from protocols.sharing import reconstruct, split

ring_arrays = hnp.arrays(np.uint64, hnp.array_shapes(max_dims=3, max_side=5))


@given(ring_arrays, st.integers(1, 12))
def test_split_then_reconstruct_is_identity(secret, n):
    shares = split(secret, n)
    assert len(shares) == n
    assert all(s.shape == secret.shape and s.dtype == np.uint64 for s in shares)
    assert np.array_equal(reconstruct(shares), secret)


def test_missing_one_share_does_not_reconstruct():
    secret = np.arange(1000, dtype=np.uint64)
    shares = split(secret, 3)
    assert not np.array_equal(reconstruct(shares[:2]), secret)


def test_prg_is_deterministic_per_key_and_nonce_and_distinct_otherwise():
    key = bytes(range(32))
    a = RingPRG(key, nonce_for_counter(0)).ring_elements(100)
    b = RingPRG(key, nonce_for_counter(0)).ring_elements(100)
    c = RingPRG(key, nonce_for_counter(1)).ring_elements(100)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(RingPRG().ring_elements(100), RingPRG().ring_elements(100))


def test_prg_output_is_writable():
    out = RingPRG().ring_elements((3, 4))
    out += np.uint64(1)  # shares are updated in place by the protocols
    assert out.shape == (3, 4)


def test_seeded_split_expands_to_the_same_shares():
    from protocols.sharing import expand_share, split_seeded

    secret = np.arange(50, dtype=np.uint64).reshape(5, 10)
    kept, seeds = split_seeded(secret, 4)
    assert len(seeds) == 3 and all(len(seed) == 32 for seed in seeds)
    assert len(set(seeds)) == 3  # fresh seeds from the OS CSPRNG
    shares = [expand_share(seed, secret.shape) for seed in seeds]
    assert np.array_equal(reconstruct([*shares, kept]), secret)
    with pytest.raises(InputValidationError, match="32 bytes"):
        expand_share(b"short", (2,))


def test_bad_arguments():
    with pytest.raises(InputValidationError, match="uint64"):
        split(np.zeros(3), 2)
    with pytest.raises(InputValidationError, match="n_shares"):
        split(np.zeros(3, np.uint64), 0)
    with pytest.raises(ValueError, match="32 bytes"):
        RingPRG(b"short")
