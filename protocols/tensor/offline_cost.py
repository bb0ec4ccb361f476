"""Operation counts and time estimates of the dealer-free offline phase (Paillier OLE).

:func:`request_counts` counts, for one provider, the Paillier encryptions,
64-bit exponentiations and multiplications modulo ``n^2`` and decryptions that
:func:`protocols.tensor.offline_store.generate_offline` performs for one
:class:`~protocols.tensor.offline_store.Request`; :func:`measure_timings`
times the operations on this machine; :meth:`OpCounts.seconds` combines
them. The time is one provider's CPU time, which is also the wall time when
every provider has its own core (the providers work in parallel; on a shared
machine with fewer cores than providers the wall time grows accordingly).

Measurement (2026-11-28, this 2-core machine, in a quiet moment;
``benchmarks/bench_offline.py`` at key sizes 2048 and 512 with its check of
one real triple, ``benchmarks/results/offline.json``): per operation at
2048 bits, encryption 12.5 ms (own key by the CRT: 7.0 ms), 64-bit
exponentiation 0.43 ms, multiplication modulo ``n^2`` 5.8 us, decryption
3.6 ms; under load, an hour earlier, everything was 1.3
to 1.5 times slower. The ladder eigensolver of the hidden-covariance mode at
d = 100, k = 5, M = 3 with its full budget of 12 iterations asks for 3
triples (100x100)@(100x100), 12 (100x100)@(100x5), 23 (5x100)@(100x5) and 41
truncation pairs (5 of shape 100x100, 36 of shape 100x5: 4.4e6 shared bits).

* Matrix triples, per provider: 6,500 own-key and 8,630 mask encryptions,
  1.7e7 multiplications (the comb of :mod:`protocols.tensor.ole`), 8,630
  decryptions: **287 s** (about two thirds for the three 100x100
  products), just inside the issue's goal of 300 s, provided each
  provider has a core of its own; under load (as an hour earlier) it would
  be about 380 s. Encryptions are 55 % of it.
* Truncation pairs by 64 shared bits, ``64 (M - 1)`` elementwise OLEs per
  element, one encryption each: 8.7e6 own-key encryptions, **about 23
  hours** (82,618 s; at the 512-bit test key about 54 minutes).
* Model against a real run: one (100x100)@(100x5) triple among 3 provider
  threads took 12.8 s wall (17.7 s in offline.json's run, under load) against
  6.1 s per provider modelled (3 providers
  on 2 cores, and the comb is Python code that holds the GIL); at 512 bits
  3.0 s against 1.0 s.

So Paillier OLE meets the goal for the triples only just (and only with a
core per provider), and misses it by a factor of about 260 with
bit-decomposed truncation pairs. Cheaper masks would help the triples (a
fixed-base rerandomisation as in :mod:`protocols.paillier.precompute` is not
enough as it is: its obfuscators cover only a subgroup of index about 4, and
the key holder could read parities of the sender's operand from the coset).
What would meet the goal with room: OT extension (Gilboa multiplication,
with IKNP/Ferret-style correlated OT at microseconds per OT, 64 OTs per ring
product) for triples, and shared random bits from OT (edaBits-style) rather
than from OLE for truncation pairs; or a lattice scheme with SIMD slots (BFV
via tenseal, thousands of plaintext slots per ciphertext, where a 2048-bit
Paillier plaintext packs 11).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass

import gmpy2
from gmpy2 import mpz

from protocols.paillier.cipher import decrypt, encrypt
from protocols.paillier.keys import generate_keypair
from protocols.tensor.offline_store import Request
from protocols.tensor.ole import OleLayout, cheaper_transposed, encrypt_own, matmul_ole_ops

_BITS = 64


@dataclass(frozen=True)
class Timings:
    """Seconds per Paillier operation at one key size."""

    key_bits: int
    encrypt: float
    encrypt_own: float
    exponentiate: float
    multiply: float
    decrypt: float


@dataclass(frozen=True)
class OpCounts:
    """Paillier operations one provider performs."""

    own_encryptions: int = 0
    encryptions: int = 0
    exponentiations: int = 0
    multiplications: int = 0
    decryptions: int = 0

    def __add__(self, other: OpCounts) -> OpCounts:
        return OpCounts(
            own_encryptions=self.own_encryptions + other.own_encryptions,
            encryptions=self.encryptions + other.encryptions,
            exponentiations=self.exponentiations + other.exponentiations,
            multiplications=self.multiplications + other.multiplications,
            decryptions=self.decryptions + other.decryptions,
        )

    def seconds(self, timings: Timings) -> float:
        """Estimated CPU seconds with these per-operation timings."""
        return (
            self.own_encryptions * timings.encrypt_own
            + self.encryptions * timings.encrypt
            + self.exponentiations * timings.exponentiate
            + self.multiplications * timings.multiply
            + self.decryptions * timings.decrypt
        )


def _matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...], peers: int, key_bits: int) -> OpCounts:
    (m, n), p = a_shape, b_shape[1]
    slots = OleLayout(key_bits, n).slots
    if cheaper_transposed((m, n), (n, p), slots, peers):
        m, p = p, m
    return OpCounts(**matmul_ole_ops(m, n, p, slots, peers)._asdict())


def _elementwise(size: int, peers: int, key_bits: int) -> OpCounts:
    replies = peers * -(-size // OleLayout(key_bits, 1).slots)
    return OpCounts(
        own_encryptions=size, encryptions=replies, exponentiations=peers * size, decryptions=replies
    )


def request_counts(request: Request, n_providers: int, key_bits: int) -> OpCounts:
    """Operations one provider performs on the critical path of one request.

    A ``"fixed"`` request is counted by :func:`total_counts`, which knows its mask's shape.
    """
    peers = n_providers - 1
    if request.kind == "matmul":
        return _matmul(request.shapes[0], request.shapes[1], peers, key_bits)
    if request.kind == "fixed":
        return OpCounts()
    size = 1
    for extent in request.shapes[0]:
        size *= extent
    if request.kind == "mul":
        return _elementwise(size, peers, key_bits)
    if request.kind == "mask":
        return OpCounts()
    # truncation: M - 1 sequential private products on 64 size bits; the owner encrypts
    # and decrypts, the others answer; every provider is owner once (provider 0 never).
    bits = size * _BITS
    slots = OleLayout(key_bits, 1).slots
    replies = -(-bits // slots)
    owner = OpCounts(own_encryptions=bits, decryptions=peers * replies)
    answer = OpCounts(encryptions=replies, exponentiations=bits)
    total = OpCounts()
    for _ in range(peers):
        total = total + owner + answer  # sequential steps: the owner's work, then the answers
    return total


def total_counts(requests: Sequence[Request], n_providers: int, key_bits: int) -> OpCounts:
    """Sum of :func:`request_counts` over a request list, ``"fixed"`` triples included."""
    total = OpCounts()
    for request in requests:
        if request.kind == "fixed":
            mask_shape = requests[request.mask].shapes[0]
            total = total + _matmul(mask_shape, request.shapes[0], n_providers - 1, key_bits)
        else:
            total = total + request_counts(request, n_providers, key_bits)
    return total


def measure_timings(
    key_bits: int, samples: int = 20, repeats: int = 3, *, allow_insecure_key_size: bool = False
) -> Timings:
    """Time encryption (public and own key), a 64-bit exponentiation and a multiplication modulo ``n^2``, decryption.

    Each is the mean over ``samples`` operations, the fastest of ``repeats``
    such means (other jobs on a shared machine only ever slow a run down).
    """
    keys = generate_keypair(key_bits, allow_insecure_key_size=allow_insecure_key_size)
    public = keys.public_key
    best = [float("inf")] * 5
    for _ in range(repeats):
        plain = [secrets.randbits(key_bits - 2) for _ in range(samples)]
        start = time.perf_counter()
        cts = encrypt(public, plain)
        t_enc = (time.perf_counter() - start) / samples
        start = time.perf_counter()
        encrypt_own(keys, plain)
        t_own = (time.perf_counter() - start) / samples
        exponents = [mpz(secrets.randbits(_BITS)) for _ in range(samples)]
        start = time.perf_counter()
        for c in cts:  # one base, a list of exponents (the OLE sender's powmod path)
            gmpy2.powmod_exp_list(c, exponents, public.n_square)
        t_exp = (time.perf_counter() - start) / samples**2
        start = time.perf_counter()
        acc = mpz(1)
        for c in cts * samples:  # the comb's and the accumulation's step
            acc = acc * c % public.n_square
        t_mul = (time.perf_counter() - start) / samples**2
        start = time.perf_counter()
        decrypt(keys.private_key, cts)
        t_dec = (time.perf_counter() - start) / samples
        best = [min(b, t) for b, t in zip(best, (t_enc, t_own, t_exp, t_mul, t_dec), strict=True)]
    return Timings(key_bits, *best)
