"""Operation counts and time estimates of the dealer-free offline phase.

:func:`request_counts` counts, for one provider, the Paillier encryptions,
64-bit exponentiations and multiplications modulo ``n^2`` and decryptions
(triples, by OLE) and the extended OTs it receives and sends (truncation
pairs, by OT) that :func:`protocols.tensor.offline_store.generate_offline`
performs for one :class:`~protocols.tensor.offline_store.Request`;
:func:`measure_timings` times the operations on this machine;
:meth:`OpCounts.seconds` combines them. The time is one provider's CPU time
on the critical path, which is also the wall time when every provider has its
own core (the providers work in parallel; on a shared machine with fewer
cores than providers the wall time grows accordingly).

Measurement (2026-11-29, 00:50 UTC, this 2-core machine, load average 0.8
to 1.5; ``python -m benchmarks.bench_offline --check``,
``benchmarks/results/offline.json``; a run a minute earlier measured every
operation 1.3 to 1.5 times slower): per operation at 2048 bits, encryption
13.1 ms (own key by the CRT: 7.2 ms), 64-bit exponentiation 0.43 ms,
multiplication modulo ``n^2`` 6.0 us, decryption 3.6 ms; an extended OT
0.23 us of CPU at the receiver and 0.28 us at the sender. The plan of the
ladder eigensolver at d = 100, k = 5, M = 3 and PPPCA's default budget of 20
iterations (:func:`protocols.tensor.offline_plan.ladder_plan`, the worst
case: every iteration, all 6 squarings, the every-holder masking rotation)
holds 143 items: 6 triples (100x100)@(100x100), 21 (100x100)@(100x5), 40
(5x100)@(100x5), 3 small ones, and 73 truncation pairs (8 of shape 100x100,
63 of 100x5, 2 of 5x5: 7.1e6 shared bits).

* Matrix triples, per provider: 12,160 own-key and 16,720 mask encryptions,
  3.3e7 multiplications (the comb of :mod:`protocols.tensor.ole`), 16,720
  decryptions: **563 s**, of which about 390 s for the six squarings. A
  run at d = 100 with a clear gap squares three times; the plan must hold
  the worst case because the squarings depend on the data. Over the
  issue's goal of 300 s even with a core per provider; three providers
  sharing these two cores need about 1.5 times that. Mask encryptions are
  39 % of it.
* Truncation pairs by 64 shared bits, each bit's ``M - 1`` products by OT:
  2.9e7 OTs received and 1.4e7 sent on the critical path, **11 s** modelled.
  Generated for real, all three providers as threads of one process: 13.5 s
  wall, 4.6 to 6.5 s of CPU and at most 286 MB sent per provider (base OTs
  included). By Paillier OLE, one encryption per bit, the pairs of a
  recorded run (4.4e6 bits) took an estimated 23 hours (82,618 s).
* Model against a real run: one (100x100)@(100x5) triple among 3 provider
  threads took 17.1 s wall against 6.3 s per provider modelled (3 providers
  on 2 cores, and the comb is Python code that holds the GIL).

So the truncation pairs are now a rounding error and the triples are the
offline phase: nine minutes per provider with a core each in the worst
case. The squarings are products of a symmetric matrix by itself, for which
a symmetric square pair ``(A, A^2)`` needs only one OLE per unordered pair
of providers (half the cross terms); that is not built yet. What would
make the triples cheaper: OT-based matrix products need ``64 m n p`` ring
words of traffic per cross term (512 MB for a 100x100 product), so they want
silent OT (VOLE) rather than IKNP; a lattice scheme with SIMD slots (BFV via
tenseal, thousands of plaintext slots per ciphertext, where a 2048-bit
Paillier plaintext packs 11) would cut the encryptions. A fixed-base
rerandomisation of the masks as in :mod:`protocols.paillier.precompute` is
not enough as it is: its obfuscators cover only a subgroup of index about 4,
and the key holder could read parities of the sender's operand from the coset.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass

import gmpy2
import numpy as np
from gmpy2 import mpz

from protocols.ot.links import setup_links
from protocols.paillier.cipher import decrypt, encrypt
from protocols.paillier.keys import generate_keypair
from protocols.party import Party
from protocols.runtime import run_inprocess
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
    ot_receiver: float = 0.0
    ot_sender: float = 0.0


@dataclass(frozen=True)
class OpCounts:
    """Paillier operations and extended OTs one provider performs."""

    own_encryptions: int = 0
    encryptions: int = 0
    exponentiations: int = 0
    multiplications: int = 0
    decryptions: int = 0
    ot_receiver: int = 0
    ot_sender: int = 0

    def __add__(self, other: OpCounts) -> OpCounts:
        return OpCounts(
            own_encryptions=self.own_encryptions + other.own_encryptions,
            encryptions=self.encryptions + other.encryptions,
            exponentiations=self.exponentiations + other.exponentiations,
            multiplications=self.multiplications + other.multiplications,
            decryptions=self.decryptions + other.decryptions,
            ot_receiver=self.ot_receiver + other.ot_receiver,
            ot_sender=self.ot_sender + other.ot_sender,
        )

    def seconds(self, timings: Timings) -> float:
        """Estimated CPU seconds with these per-operation timings."""
        return (
            self.own_encryptions * timings.encrypt_own
            + self.encryptions * timings.encrypt
            + self.exponentiations * timings.exponentiate
            + self.multiplications * timings.multiply
            + self.decryptions * timings.decrypt
            + self.ot_receiver * timings.ot_receiver
            + self.ot_sender * timings.ot_sender
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
    # truncation: M - 1 sequential OT products on 64 size bits; in each the owner receives from every
    # peer, then each peer answers as sender (in parallel); every provider but provider 0 owns one step.
    bits = size * _BITS
    step = OpCounts(ot_receiver=peers * bits, ot_sender=bits)
    total = OpCounts()
    for _ in range(peers):
        total = total + step
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


def measure_ot_timings(batch: int = 1 << 18, repeats: int = 3) -> tuple[float, float]:
    """CPU seconds per extended OT at the receiver and at the sender: one batch between two threads.

    Each end's :func:`time.thread_time` over the batch (the base OTs before it
    are not counted), divided by ``batch``; the fastest of ``repeats`` runs.
    """
    bits = np.frombuffer(secrets.token_bytes(batch), dtype=np.uint8) & np.uint8(1)
    words = np.frombuffer(secrets.token_bytes(8 * batch), dtype=np.uint64)

    def receiver(party: Party) -> float:
        end = setup_links(party, ["sender"]).receivers["sender"]
        start = time.thread_time()
        end.finish(party, end.start(party, bits))
        return (time.thread_time() - start) / batch

    def sender(party: Party) -> float:
        end = setup_links(party, ["receiver"]).senders["receiver"]
        start = time.thread_time()
        end.send_correlated(party, words)
        return (time.thread_time() - start) / batch

    runs = [run_inprocess({"receiver": receiver, "sender": sender}).outputs for _ in range(repeats)]
    return min(r["receiver"] for r in runs), min(r["sender"] for r in runs)


def measure_timings(
    key_bits: int, samples: int = 20, repeats: int = 3, *, allow_insecure_key_size: bool = False
) -> Timings:
    """Time the Paillier operations and an extended OT at each end.

    Paillier: encryption (public and own key), a 64-bit exponentiation and a
    multiplication modulo ``n^2``, decryption; each the mean over ``samples``
    operations, the fastest of ``repeats`` such means (other jobs on a shared
    machine only ever slow a run down). OT: :func:`measure_ot_timings`.
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
    ot_receiver, ot_sender = measure_ot_timings(repeats=repeats)
    t_enc, t_own, t_exp, t_mul, t_dec = best
    return Timings(key_bits, t_enc, t_own, t_exp, t_mul, t_dec, ot_receiver, ot_sender)
