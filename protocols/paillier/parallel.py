"""Encryption and decryption spread over several cores.

Two mechanisms, chosen by what holds Python's GIL:

threads (``r^n`` encryption, CRT decryption)
    The costly step is :func:`gmpy2.powmod_base_list`, which releases the GIL,
    so plain threads run it on all cores with no start-up cost (~1.6x on the
    2-core reference machine).
processes (fixed-base encryption)
    The fixed-base product is a chain of Python-level modular multiplications
    that hold the GIL, so it needs processes. Each worker is a fresh
    ``python -m protocols.paillier.worker`` that receives one request and
    returns one reply over standard input/output, both in the engine's
    non-executable wire format (:mod:`protocols.transport.wire`): only the
    modulus and this party's own plaintexts travel, as fixed-width bytes;
    nothing is pickled, and the reply is parsed with the same checks as
    network input. Each worker builds its own table from its own CSPRNG draw.
    Dedicated processes (rather than :mod:`multiprocessing`) keep start-up to
    the import of this package (~0.3 s): ``multiprocessing``'s ``spawn`` would
    also re-import the caller's ``__main__`` in every worker, which can take
    seconds.

Input is cut into one contiguous chunk per worker; threads and processes live
for one call, so no pool, table or key outlives it. :func:`worth_parallel`
says when splitting pays off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gmpy2 import mpz

from protocols.errors import InputValidationError, WireFormatError
from protocols.paillier.cipher import RandomnessSource, StandardRandomness, decrypt, encrypt
from protocols.paillier.keys import PaillierPrivateKey, PaillierPublicKey
from protocols.paillier.precompute import DEFAULT_WINDOW_BITS, FixedBaseRandomness
from protocols.paillier.serialize import ciphertexts_from_bytes
from protocols.paillier.worker import join_fixed
from protocols.transport.wire import decode_message, encode_message

RANDOMNESS_MODES = ("standard", "fixed-base")
#: Fewest items per call for which splitting pays off, per operation (2-core
#: reference machine, 2048-bit keys: r^n ~9 ms and CRT decryption ~2.6 ms per
#: item on threads; fixed-base ~0.6 ms per item plus ~0.5 s of process start-up
#: and table build per worker).
_MIN_PARALLEL_ITEMS = {"standard": 8, "fixed-base": 4096, "decrypt": 8}
_WORKER_MODULE = "protocols.paillier.worker"


def worth_parallel(count: int, workers: int, mode: str) -> bool:
    """Whether spreading ``count`` items over ``workers`` processes is expected to be faster.

    Parameters
    ----------
    count : int
        Number of plaintexts (or ciphertexts) to process.
    workers : int
        Processes available.
    mode : {"standard", "fixed-base", "decrypt"}
        The operation.
    """
    if mode not in _MIN_PARALLEL_ITEMS:
        raise InputValidationError(f"unknown mode {mode!r}; choose one of {list(_MIN_PARALLEL_ITEMS)}")
    return workers > 1 and count >= max(_MIN_PARALLEL_ITEMS[mode], 2 * workers)


def check_workers(workers: int) -> int:
    """Validate a worker count (a positive integer) and return it."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputValidationError(f"workers must be a positive integer, got {workers!r}")
    return workers


def _chunks(items: Sequence[int], parts: int) -> list[list[mpz]]:
    size = -(-len(items) // parts)
    return [[mpz(v) for v in items[i : i + size]] for i in range(0, len(items), size)]


def _worker_env() -> dict[str, str]:
    """The caller's environment, with this package's root first on ``PYTHONPATH``."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def _call_worker(request: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    process = subprocess.run(
        [sys.executable, "-m", _WORKER_MODULE],
        input=encode_message(request),
        capture_output=True,
        env=env,
        check=False,
    )
    if process.returncode != 0:
        tail = process.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(
            f"a Paillier worker process failed (exit {process.returncode}): {' | '.join(tail)}"
        )
    reply = decode_message(process.stdout)
    if not isinstance(reply, dict):
        raise WireFormatError("a Paillier worker replied with something other than a dict")
    return reply


def _run_workers(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run one worker process per request, concurrently; replies in request order."""
    env = _worker_env()
    with ThreadPoolExecutor(max_workers=len(requests)) as threads:
        return list(threads.map(lambda r: _call_worker(r, env), requests))


def _thread_map(fn: Callable[[list[mpz]], list[mpz]], chunks: list[list[mpz]]) -> list[mpz]:
    """Apply ``fn`` to each chunk on its own thread; concatenate the results in order."""
    with ThreadPoolExecutor(max_workers=len(chunks)) as threads:
        results = list(threads.map(fn, chunks))
    return [value for result in results for value in result]


def encrypt_parallel(
    public_key: PaillierPublicKey,
    plaintexts: Sequence[int],
    *,
    workers: int,
    mode: str = "standard",
    exponent_bits: int | None = None,
    window_bits: int = DEFAULT_WINDOW_BITS,
    processes: bool | None = None,
) -> list[mpz]:
    """Encrypt ``plaintexts`` (in ``[0, n)``) on ``workers`` cores.

    Parameters
    ----------
    public_key : PaillierPublicKey
    plaintexts : sequence of int
    workers : int
        Number of threads or processes (2 on the reference machine).
    mode : {"standard", "fixed-base"}
        Randomness: ``r^n`` (default) or each worker's own fixed-base table.
    exponent_bits, window_bits
        Fixed-base parameters (see :class:`~protocols.paillier.precompute.FixedBaseRandomness`).
    processes : bool, optional
        Force worker processes (``True``) or threads (``False``); by default
        threads for ``standard`` and processes for ``fixed-base`` (see the
        module notes; fixed-base on threads would run one at a time).

    Returns
    -------
    list of gmpy2.mpz
        Ciphertexts in input order.
    """
    workers = check_workers(workers)
    if mode not in RANDOMNESS_MODES:
        raise InputValidationError(
            f"unknown randomness mode {mode!r}; choose one of {list(RANDOMNESS_MODES)}"
        )
    if not plaintexts:
        return []
    chunks = _chunks(plaintexts, min(workers, len(plaintexts)))
    for chunk in chunks:
        if any(m < 0 or m >= public_key.n for m in chunk):
            raise InputValidationError(f"plaintexts must lie in [0, n) for a {public_key.bits}-bit key")
    if not (mode == "fixed-base" if processes is None else processes):

        def encrypt_chunk(chunk: list[mpz]) -> list[mpz]:
            if mode == "fixed-base":
                source: RandomnessSource = FixedBaseRandomness(
                    public_key, exponent_bits=exponent_bits, window_bits=window_bits
                )
            else:
                source = StandardRandomness(public_key)
            return encrypt(public_key, chunk, source)

        return _thread_map(encrypt_chunk, chunks)
    base = {
        "op": "encrypt",
        "n": public_key.to_bytes(),
        "mode": mode,
        "exponent_bits": exponent_bits,
        "window_bits": window_bits,
    }
    replies = _run_workers([{**base, "plaintexts": join_fixed(c, public_key.nbytes)} for c in chunks])
    out: list[mpz] = []
    for chunk, reply in zip(chunks, replies, strict=True):
        payload = reply.get("ciphertexts")
        if not isinstance(payload, bytes):
            raise WireFormatError("a Paillier worker replied without its ciphertexts")
        out += ciphertexts_from_bytes(public_key, payload, len(chunk))
    return out


def decrypt_parallel(
    private_key: PaillierPrivateKey, ciphertexts: Sequence[int], *, workers: int
) -> list[mpz]:
    """CRT-decrypt ``ciphertexts`` on ``workers`` threads (the exponentiations release the GIL)."""
    workers = check_workers(workers)
    if not ciphertexts:
        return []
    chunks = _chunks(ciphertexts, min(workers, len(ciphertexts)))
    return _thread_map(lambda chunk: decrypt(private_key, chunk), chunks)
