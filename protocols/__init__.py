"""MPC engine: fixed-point encoding, secret sharing, secure-sum backends, transport.

This package knows nothing about PCA. Everything here is usable on its own to
build other secure-aggregation protocols; see :func:`protocols.secure_sum.secure_sum`.

Modules (imports point down this list)
--------------------------------------
secure_sum
    The embeddable primitive: every party calls it, only the receiver learns the sum.
agreement
    Every sum of :func:`~protocols.secure_sum.secure_sum` checks, by default and
    without an added wait, that the parties' backends match (``frac_bits``, mode):
    the receiver compares each contributor's settings before it reads a share.
tensor
    Secret-shared fixed-point tensors with a dealer (Beaver products,
    truncation, reveals) and a top-k eigensolver built on them.
backends
    :class:`SecureSumBackend` and its implementations (additive shares or
    masks, Paillier, CrypTen); :func:`make_backend` builds one by name.
paillier
    Paillier arithmetic on gmpy2 behind the Paillier backend.
ot
    Oblivious transfer among providers (base OTs, IKNP extension, Gilboa bit
    products), for correlated randomness without a dealer.
runtime
    Runs role functions as parties: threads (:func:`run_inprocess`), local
    processes over TLS (:func:`run_processes`), one party per host
    (:func:`run_party`); per-party thread helpers.
transport
    Channels (in-process queues, processes and hosts) and the typed wire format.
party
    :class:`Party`: a name and a channel, what every role function receives.
messages
    Every check on data received from a peer.
sharing, prg, encoding, triangle
    Additive shares, ChaCha20 streams, fixed point in Z_2^64, packed triangles.
shamir
    Threshold (Shamir) sharing of seeds and keys, for sums that survive a dropped party.
dp
    Differential-privacy noise for secure sums: Gaussian calibration
    (analytic and classical), the exact discrete Gaussian sampler, and a
    privacy budget accountant.
identity
    Per-run signing keys of the parties, for messages a third party relays.
testing
    The conformance kit for backends and protocols (needs ``hypothesis``).
errors
    The exception hierarchy.
"""

from protocols.backends import SecureSumBackend, make_backend
from protocols.backends.additive import AdditiveBackend
from protocols.backends.paillier import PaillierBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import (
    InputValidationError,
    PeerFailureError,
    PeerTimeoutError,
    ProtocolError,
    RingOverflowError,
    WireFormatError,
)
from protocols.party import Party
from protocols.runtime import LinkOptions, RunResult, run_inprocess, run_party, run_processes
from protocols.secure_sum import run_secure_sum, secure_sum, secure_sum_symmetric

__all__ = [
    "AdditiveBackend",
    "FixedPointCodec",
    "InputValidationError",
    "LinkOptions",
    "PaillierBackend",
    "Party",
    "PeerFailureError",
    "PeerTimeoutError",
    "ProtocolError",
    "RingOverflowError",
    "RunResult",
    "SecureSumBackend",
    "WireFormatError",
    "make_backend",
    "run_inprocess",
    "run_party",
    "run_processes",
    "run_secure_sum",
    "secure_sum",
    "secure_sum_symmetric",
]
