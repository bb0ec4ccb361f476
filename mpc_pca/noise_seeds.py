"""The DP noise seed of a run, and each party's generator derived from it alone.

Every runner (threads, local processes, one process per host) gives party
``r`` the ``r``-th child of one root seed (:func:`seeded_generator`), exactly
the generators :func:`mpc_pca.dp.mechanisms.spawn_generators` spawns, so a
fixed seed reproduces a run in every runner. A run with a known seed is not
private (experiments only).
"""

from __future__ import annotations

import secrets
from numbers import Integral

import numpy as np

from protocols.errors import InputValidationError


def check_noise_seed(noise_seed: object) -> None:
    """Refuse a noise seed that is not ``None`` or a non-negative integer, naming it."""
    if noise_seed is None:
        return
    if isinstance(noise_seed, bool) or not isinstance(noise_seed, Integral) or noise_seed < 0:
        raise InputValidationError(f"noise_seed={noise_seed!r} must be None or a non-negative integer")


#: A run's DP noise seed as the estimators take it (``random_state``).
NoiseSeed = int | np.random.SeedSequence | np.random.Generator | None


def noise_root(random_state: NoiseSeed) -> int | np.random.SeedSequence:
    """The one seed every party's noise generator is derived from (party ``r`` takes child ``r``).

    An int or ``SeedSequence`` is used as given; a ``Generator`` is asked for a
    63-bit seed; ``None`` draws 128 bits from :mod:`secrets` (a private run).

    Raises
    ------
    InputValidationError
        For any other value, naming it.
    """
    if random_state is None:
        return secrets.randbits(128)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if (
        isinstance(random_state, (int, np.integer))
        and not isinstance(random_state, bool)
        and random_state >= 0
    ):
        return int(random_state)
    raise InputValidationError(
        f"random_state={random_state!r} must be None, a non-negative int, a SeedSequence or a Generator"
    )


def seeded_generator(noise_seed: int | np.random.SeedSequence | None, index: int) -> np.random.Generator:
    """The ``index``-th generator of ``spawn_generators(noise_seed, n)`` for any ``n > index``.

    ``SeedSequence(seed).spawn(n)[i]`` is ``SeedSequence(seed, spawn_key=(i,))``
    whatever ``n``, so a party can build its own generator alone and still get
    the one every other runner gives it. A ``SeedSequence`` gives its
    ``index``-th next child (``noise_seed.spawn(n)[index]``, without spawning). ``noise_seed=None`` seeds from
    :mod:`secrets` (128 bits): the private default, each party its own seed.

    Raises
    ------
    InputValidationError
        If ``noise_seed`` is not ``None``, a ``SeedSequence`` or a non-negative integer.
    """
    if noise_seed is None:
        return np.random.default_rng(np.random.SeedSequence(secrets.randbits(128)))
    if isinstance(noise_seed, np.random.SeedSequence):
        key = (*noise_seed.spawn_key, noise_seed.n_children_spawned + int(index))
        child = np.random.SeedSequence(noise_seed.entropy, spawn_key=key, pool_size=noise_seed.pool_size)
        return np.random.default_rng(child)
    check_noise_seed(noise_seed)
    return np.random.default_rng(np.random.SeedSequence(int(noise_seed), spawn_key=(int(index),)))


__all__ = ["NoiseSeed", "check_noise_seed", "noise_root", "seeded_generator"]
