"""Secure-sum backends behind one interface, and the registry of their names.

Modules
-------
base
    :class:`SecureSumBackend`, the interface: validation before anything is
    sent, then one backend-specific ``_run``.
additive
    Additive secret sharing over Z_2^64: the paper's share distribution
    (``shares``) or pairwise X25519 masks (``masks``).
sparse_masks
    Pairwise masks along a sparse random graph (``additive-sparse-masks``).
dropout
    The masks-mode sum that survives providers dropping before their input
    arrives (SecAgg-style double masking with Shamir-shared seeds).
dropout_agreement
    Its survivor-set agreement: the ``2 t > M`` rule and the digests every
    survivor needs from every member of its set before revealing a share.
dropout_unmask
    Its pair keys and unmasking: a provider's answer (never both secrets of one
    provider) and the receiver's rebuilding of seeds and keys from Shamir shares.
paillier
    Paillier encryption (packing, precomputed randomness, workers), on
    :mod:`protocols.paillier`.
crypten
    CrypTen's ``ArithmeticSharedTensor`` over a ``torch.distributed`` group;
    :mod:`~protocols.backends.crypten_compat` holds its import shim.

Backends are plain objects the caller constructs and passes in; protocols
never look one up from a global. :func:`make_backend` builds one from its
command-line name, importing the backend's module only then (so that
importing this package pulls in neither gmpy2-heavy Paillier code nor torch).
"""

from __future__ import annotations

import importlib
from typing import Any

from protocols.backends.additive import AdditiveBackend
from protocols.backends.base import SecureSumBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError

#: Command-line name -> (module, class, fixed constructor options).
_BACKENDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "additive": ("protocols.backends.additive", "AdditiveBackend", {"mode": "shares"}),
    "additive-masks": ("protocols.backends.additive", "AdditiveBackend", {"mode": "masks"}),
    "additive-sparse-masks": ("protocols.backends.additive", "AdditiveBackend", {"mode": "sparse-masks"}),
    "paillier": ("protocols.backends.paillier", "PaillierBackend", {}),
    "crypten": ("protocols.backends.crypten", "CrypTenBackend", {}),
}

#: Every name :func:`make_backend` accepts.
BACKEND_NAMES: tuple[str, ...] = tuple(_BACKENDS)

#: How an encrypting party of the ``paillier`` backend makes its obfuscators (the ``paillier_randomness`` setting):
#:
#: ``fixed-base`` (:data:`DEFAULT_PAILLIER_RANDOMNESS`: the command line's and the protocols' settings' default)
#:     ``h_s^a`` from a table of powers of one ``n``-th residue per party
#:     (:mod:`protocols.paillier.precompute`), with full-length exponents of
#:     ``log2(n) + 128`` bits: ``h_s^a`` is within ``2^-128`` of a uniform element
#:     of the subgroup ``h_s`` generates, so no short-exponent assumption is made.
#: ``fixed-base-short``
#:     The same with ``log2(n) / 2``-bit exponents (about twice as fast again;
#:     rests on the short-exponent assumption of Damgard, Jurik and Nielsen as well).
#: ``offline``
#:     Textbook ``r^n`` with uniform ``r``, computed as a stock before each
#:     encryption (:mod:`protocols.paillier.offline`): DCR only.
#: ``standard``
#:     Textbook ``r^n`` computed while encrypting.
PAILLIER_RANDOMNESS: tuple[str, ...] = ("fixed-base", "fixed-base-short", "offline", "standard")
#: The randomness of ``mpc-pca run``/``party`` and of a protocol's ``paillier_randomness=None`` setting.
#: A backend object built without options (``PaillierBackend()``, ``make_backend("paillier")``,
#: ``PPPCA(backend="paillier")``) stays ``standard``; ``make_backend("paillier", **paillier_options())``
#: is this default (docs/tutorials/ss-vs-paillier.md states both; both rest on DCR alone).
DEFAULT_PAILLIER_RANDOMNESS = "fixed-base"
#: Bits beyond ``log2(n)`` of a ``fixed-base`` exponent (statistical distance ``2^-128``).
FULL_EXPONENT_SLACK = 128
#: Most ``paillier_workers`` accepted.
MAX_PAILLIER_WORKERS = 1024


def paillier_options(
    randomness: str | None = None, workers: int | None = None, key_bits: int | None = None
) -> dict[str, Any]:
    """The ``PaillierBackend`` constructor options of the ``paillier_randomness`` and ``paillier_workers`` settings.

    Parameters
    ----------
    randomness : str, optional
        One of :data:`PAILLIER_RANDOMNESS` (default :data:`DEFAULT_PAILLIER_RANDOMNESS`).
    workers : int, optional
        Cores each party uses to encrypt and decrypt (threads, or worker
        processes for large fixed-base batches); default: the CPUs this process may use.
    key_bits : int, optional
        The modulus size (2048 by default): fixes the full-length exponent.

    Raises
    ------
    InputValidationError
        For an unknown mode or a worker count that is not an integer in ``[1, 1024]``.

    Examples
    --------
    >>> paillier_options("fixed-base", 2)
    {'precompute': True, 'offline': False, 'workers': 2, 'exponent_bits': 2176}
    >>> paillier_options("offline")
    {'precompute': False, 'offline': True, 'workers': None}
    """
    mode = DEFAULT_PAILLIER_RANDOMNESS if randomness is None else randomness
    if mode not in PAILLIER_RANDOMNESS:
        raise InputValidationError(
            f"paillier_randomness={randomness!r} is not one of {list(PAILLIER_RANDOMNESS)}"
        )
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_PAILLIER_WORKERS
    ):
        raise InputValidationError(
            f"paillier_workers must be an integer from 1 to {MAX_PAILLIER_WORKERS}, got {workers!r}"
        )
    options: dict[str, Any] = {
        "precompute": mode.startswith("fixed-base"),
        "offline": mode == "offline",
        "workers": workers,
    }
    if mode == "fixed-base":
        options["exponent_bits"] = (2048 if key_bits is None else int(key_bits)) + FULL_EXPONENT_SLACK
    return options


def backend_class(name: str) -> type[SecureSumBackend]:
    """The class :func:`make_backend` builds for ``name``, to read its capabilities without making one.

    Raises
    ------
    InputValidationError
        For an unknown name.
    """
    if name not in _BACKENDS:
        raise InputValidationError(f"unknown backend {name!r}; choose one of {list(BACKEND_NAMES)}")
    module_name, class_name, _ = _BACKENDS[name]
    cls: type[SecureSumBackend] = getattr(importlib.import_module(module_name), class_name)
    return cls


def make_backend(
    name: str, *, frac_bits: int | None = None, key_bits: int | None = None, **options: Any
) -> SecureSumBackend:
    """Build a backend from its command-line name and options.

    Parameters
    ----------
    name : {"additive", "additive-masks", "additive-sparse-masks", "paillier", "crypten"}
        ``additive`` is the paper's share distribution, ``additive-masks`` the
        pairwise-mask mode of the same backend, ``additive-sparse-masks`` its
        sparse-graph mode.
    frac_bits : int, optional
        Fractional bits of the fixed-point codec (the backend's default if omitted).
    key_bits : int, optional
        Paillier modulus size; only the ``paillier`` backend takes it.
    **options
        Passed to the backend's constructor.

    Raises
    ------
    InputValidationError
        For an unknown name, or ``key_bits`` given to a backend other than Paillier.

    Examples
    --------
    >>> make_backend("additive-masks").mode
    'masks'
    >>> make_backend("rot13")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: unknown backend 'rot13'; choose one of \
['additive', 'additive-masks', 'additive-sparse-masks', 'paillier', 'crypten']
    """
    cls = backend_class(name)
    fixed = _BACKENDS[name][2]
    if frac_bits is not None:
        options["codec"] = FixedPointCodec(frac_bits)
    if key_bits is not None:
        if name != "paillier":
            raise InputValidationError(f"key_bits applies to the paillier backend only, not {name!r}")
        options["key_bits"] = key_bits
    return cls(**fixed, **options)


__all__ = [
    "BACKEND_NAMES",
    "PAILLIER_RANDOMNESS",
    "AdditiveBackend",
    "SecureSumBackend",
    "backend_class",
    "make_backend",
    "paillier_options",
]
