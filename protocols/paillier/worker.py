"""Worker process for :mod:`protocols.paillier.parallel` (``python -m protocols.paillier.worker``).

Reads one request from standard input, in the engine's non-executable wire
format (:mod:`protocols.transport.wire`, never pickle), and writes one reply
to standard output:

``{"op": "encrypt", "n", "plaintexts", "mode", "exponent_bits", "window_bits"}``
    ``n`` and the plaintexts as fixed-width big-endian bytes (width of ``n``);
    replies ``{"ciphertexts": bytes}`` (width of ``n^2``).

The worker draws its own randomness from :mod:`secrets`; in ``fixed-base``
mode it builds its own table (its own secret ``h``).
"""

from __future__ import annotations

import sys
from typing import Any

from gmpy2 import mpz

from protocols.errors import WireFormatError
from protocols.paillier import cipher
from protocols.paillier.keys import PaillierPublicKey
from protocols.paillier.precompute import FixedBaseRandomness
from protocols.paillier.serialize import ciphertexts_to_bytes
from protocols.transport.wire import decode_message, encode_message


def split_fixed(data: bytes, width: int) -> list[mpz]:
    """Cut ``data`` into big-endian integers of ``width`` bytes each."""
    if not isinstance(data, bytes) or len(data) % width:
        raise WireFormatError(f"payload is not a whole number of {width}-byte integers")
    return [mpz.from_bytes(data[i : i + width], "big") for i in range(0, len(data), width)]


def join_fixed(values: list[mpz], width: int) -> bytes:
    """Concatenate integers as ``width``-byte big-endian values."""
    return b"".join(v.to_bytes(width, "big") for v in values)


def handle(request: Any) -> dict[str, Any]:
    """Serve one request dictionary (see the module docstring)."""
    if not isinstance(request, dict):
        raise WireFormatError("a worker request must be a dict")
    op = request.get("op")
    if op == "encrypt":
        public_key = PaillierPublicKey.from_bytes(request["n"])
        plaintexts = split_fixed(request["plaintexts"], public_key.nbytes)
        if request["mode"] == "fixed-base":
            randomness: cipher.RandomnessSource = FixedBaseRandomness(
                public_key, exponent_bits=request["exponent_bits"], window_bits=request["window_bits"]
            )
        elif request["mode"] == "standard":
            randomness = cipher.StandardRandomness(public_key)
        else:
            raise WireFormatError(f"unknown randomness mode {request['mode']!r}")
        return {
            "ciphertexts": ciphertexts_to_bytes(
                public_key, cipher.encrypt(public_key, plaintexts, randomness)
            )
        }
    raise WireFormatError(f"unknown worker operation {op!r}")


def main() -> int:
    """Read one request from stdin, write the reply to stdout."""
    request = decode_message(sys.stdin.buffer.read())
    sys.stdout.buffer.write(encode_message(handle(request)))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
