"""Offline/online Paillier encryption with textbook obfuscators.

Paillier's obfuscator ``rho = r^n mod n^2`` does not depend on the plaintext,
so it can be computed before the inputs exist (the *offline* phase). The
*online* encryption of ``m`` is then ``(1 + m n) rho mod n^2``: one modular
multiplication (``m n + 1`` is a plain product, no reduction) per ciphertext.

Unlike :class:`~protocols.paillier.precompute.FixedBaseRandomness`, every
``r`` here is uniform in ``Z_n^*`` from :mod:`secrets` and every ``rho`` is
used for exactly one ciphertext, so semantic security rests on the decisional
composite residuosity (DCR) assumption alone, exactly as for
:class:`~protocols.paillier.cipher.StandardRandomness`: only *when* the
exponentiation happens changes (Paillier, Eurocrypt 1999, §4; the
offline/online split is the standard one of e.g. Catalano et al.).

The offline exponentiations run through :func:`gmpy2.powmod_base_list`, which
releases the GIL, on one thread per usable CPU by default.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import gmpy2
from gmpy2 import mpz

from protocols.errors import InputValidationError
from protocols.paillier.cipher import random_units
from protocols.paillier.keys import PaillierPublicKey
from protocols.runtime.threads import usable_cpus


class ObfuscatorPool:
    """A stock of precomputed ``r^n mod n^2`` obfuscators, each handed out once.

    Parameters
    ----------
    public_key : PaillierPublicKey
        The key the obfuscators are for.
    workers : int, optional
        Threads for :meth:`precompute`; the CPUs this process may use by default.

    Attributes
    ----------
    offline_seconds : float
        Wall time spent in :meth:`precompute` so far.
    online_shortfall : int
        Obfuscators that had to be computed on demand because the stock ran out.

    Examples
    --------
    >>> from protocols.paillier.keys import generate_keypair
    >>> from protocols.paillier.cipher import encrypt, decrypt
    >>> public, private = generate_keypair(512, allow_insecure_key_size=True)
    >>> pool = ObfuscatorPool(public, workers=1)
    >>> pool.precompute(3)
    3
    >>> [int(m) for m in decrypt(private, encrypt(public, [5, 7], pool))], pool.available
    ([5, 7], 1)
    """

    name = "offline-standard"

    def __init__(self, public_key: PaillierPublicKey, *, workers: int | None = None) -> None:
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise InputValidationError(f"workers must be a positive integer, got {workers!r}")
        self.public_key = public_key
        self.workers = usable_cpus() if workers is None else workers
        self._stock: deque[mpz] = deque()
        self.offline_seconds = 0.0
        self.online_shortfall = 0

    @property
    def available(self) -> int:
        """Obfuscators in stock."""
        return len(self._stock)

    def _compute(self, count: int, workers: int) -> list[mpz]:
        n, n2 = self.public_key.n, self.public_key.n_square
        units = random_units(n, count)
        if workers <= 1 or count < 2 * workers:
            return list(gmpy2.powmod_base_list(units, n, n2))
        size = -(-count // workers)
        chunks = [units[i : i + size] for i in range(0, count, size)]
        with ThreadPoolExecutor(len(chunks)) as pool:
            parts = list(pool.map(lambda chunk: gmpy2.powmod_base_list(chunk, n, n2), chunks))
        return [rho for part in parts for rho in part]

    def precompute(self, count: int) -> int:
        """Offline phase: add ``count`` fresh obfuscators to the stock; returns the stock size."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputValidationError(f"count must be a non-negative integer, got {count!r}")
        start = time.perf_counter()
        self._stock.extend(self._compute(count, self.workers))
        self.offline_seconds += time.perf_counter() - start
        return len(self._stock)

    def obfuscators(self, count: int) -> list[mpz]:
        """Take ``count`` obfuscators out of the stock (computing any shortfall now)."""
        taken = [self._stock.popleft() for _ in range(min(count, len(self._stock)))]
        missing = count - len(taken)
        if missing:
            self.online_shortfall += missing
            taken.extend(self._compute(missing, self.workers))
        return taken
