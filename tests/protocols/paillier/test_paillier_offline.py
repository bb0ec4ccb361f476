"""Offline/online Paillier: precomputed textbook obfuscators, each used once."""

import numpy as np
import pytest

from protocols.backends.paillier import PaillierBackend
from protocols.errors import InputValidationError
from protocols.paillier.cipher import decrypt, encrypt
from protocols.paillier.keys import generate_keypair
from protocols.paillier.offline import ObfuscatorPool
from protocols.runtime import usable_cpus
from protocols.secure_sum import run_secure_sum


@pytest.fixture(scope="module")
def keypair():
    return generate_keypair(512, allow_insecure_key_size=True)


@pytest.mark.parametrize("workers", [1, 3])
def test_pool_obfuscators_are_nth_residues_used_once(keypair, workers):
    public, private = keypair
    pool = ObfuscatorPool(public, workers=workers)
    assert pool.precompute(10) == 10
    ciphertexts = encrypt(public, [42] * 8, pool)
    assert pool.available == 2 and pool.online_shortfall == 0
    assert len(set(ciphertexts)) == 8  # a fresh obfuscator for every ciphertext
    assert [int(m) for m in decrypt(private, ciphertexts)] == [42] * 8  # rho is an n-th residue
    encrypt(public, [1, 2, 3], pool)
    assert pool.available == 0 and pool.online_shortfall == 1
    assert pool.offline_seconds > 0


def test_pool_refuses_bad_arguments(keypair):
    with pytest.raises(InputValidationError, match="workers"):
        ObfuscatorPool(keypair[0], workers=0)
    with pytest.raises(InputValidationError, match="count"):
        ObfuscatorPool(keypair[0]).precompute(-1)


def test_backend_offline_mode_sums_exactly(keypair, monkeypatch):
    import protocols.backends.paillier as backend_module

    def no_online_randomness(*args, **kwargs):
        raise AssertionError("offline mode computed textbook randomness online")

    rng = np.random.default_rng(0)
    values = {f"p{i}": rng.normal(size=(9, 7)) for i in range(3)}
    backend = PaillierBackend(keypair=keypair, allow_insecure_key_size=True, offline=True, workers=2)
    with monkeypatch.context() as patch:
        patch.setattr(backend_module, "StandardRandomness", no_online_randomness)
        total, _ = run_secure_sum(values, receiver="server", backend=backend)
    plain, _ = run_secure_sum(
        values, receiver="server", backend=PaillierBackend(keypair=keypair, allow_insecure_key_size=True)
    )
    np.testing.assert_array_equal(total, plain)
    assert np.allclose(total, sum(values.values()), atol=1e-5)


def test_workers_default_to_usable_cpus(keypair):
    assert PaillierBackend(keypair=keypair, allow_insecure_key_size=True).workers == usable_cpus()
