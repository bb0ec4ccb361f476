"""MPC engine: fixed-point encoding, secret sharing, secure-sum backends, transport.

This package knows nothing about PCA. Everything here is usable on its own to
build other secure-aggregation protocols; see :func:`protocols.secure_sum.secure_sum`.
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
from protocols.runtime import RunResult, run_inprocess
from protocols.secure_sum import run_secure_sum, secure_sum, secure_sum_symmetric

__all__ = [
    "AdditiveBackend",
    "FixedPointCodec",
    "InputValidationError",
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
    "run_secure_sum",
    "secure_sum",
    "secure_sum_symmetric",
]
