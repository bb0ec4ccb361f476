"""Every check on data received from a peer.

A peer's message may be anything the wire format can carry; these functions
turn "not what the protocol expects" into a :class:`~protocols.errors.ProtocolError`
that names the sender, so no malformed or hostile message reaches arithmetic.
Protocols (secure-sum backends here, PCA roles in :mod:`mpc_pca`) call them on
every value they receive.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import ProtocolError


def expect_array(message: Any, *, sender: str, shape: tuple[int, ...] | None, dtype: Any) -> np.ndarray:
    """Check that a peer's message is an array of exactly ``dtype`` and ``shape``.

    Parameters
    ----------
    message : object
        What arrived.
    sender : str
        The peer, named in the error.
    shape : tuple of int or None
        Agreed shape; ``None`` accepts any shape.
    dtype : dtype-like
        Agreed dtype (ring words are ``uint64``).

    Raises
    ------
    ProtocolError
        If ``message`` is not an array of that dtype and shape.

    Examples
    --------
    >>> import numpy as np
    >>> expect_array(np.zeros(3, np.uint64), sender="p0", shape=(3,), dtype=np.uint64).shape
    (3,)
    >>> expect_array([1, 2], sender="p0", shape=None, dtype=np.uint64)
    Traceback (most recent call last):
    ...
    protocols.errors.ProtocolError: expected an array from 'p0', got list
    """
    if not isinstance(message, np.ndarray):
        raise ProtocolError(f"expected an array from {sender!r}, got {type(message).__name__}")
    if message.dtype != np.dtype(dtype):
        raise ProtocolError(f"expected dtype {np.dtype(dtype)} from {sender!r}, got {message.dtype}")
    if shape is not None and message.shape != tuple(shape):
        raise ProtocolError(f"{sender!r} sent an array of shape {message.shape}, expected {tuple(shape)}")
    return message


def expect_real_array(
    message: Any, sender: str, shape: tuple[int | None, ...], what: str = "an array"
) -> NDArray[np.float64]:
    """Check a real array received from a peer: dtype, shape and finiteness.

    Parameters
    ----------
    message : object
        What arrived.
    sender : str
        The peer, named in the error.
    shape : tuple of int or None
        Agreed shape; ``None`` accepts any length along that axis.
    what : str
        What the array is, named in the error.

    Returns
    -------
    ndarray of float64
        The message as float64 (no copy when it already is).

    Raises
    ------
    ProtocolError
        If ``message`` is not a real array of that shape, or holds NaN/inf.

    Examples
    --------
    >>> import numpy as np
    >>> expect_real_array(np.array([np.nan]), "site0", (1,), "the mean")
    Traceback (most recent call last):
    ...
    protocols.errors.ProtocolError: 'site0' sent the mean with non-finite values
    """
    ok = (
        isinstance(message, np.ndarray)
        and message.dtype.kind in "fiu"
        and message.ndim == len(shape)
        and all(want is None or got == want for got, want in zip(message.shape, shape, strict=True))
    )
    if not ok:
        got = message.shape if isinstance(message, np.ndarray) else type(message).__name__
        raise ProtocolError(f"{sender!r} sent {what} as {got}, expected a real array of shape {shape}")
    out = message.astype(np.float64, copy=False)
    if not np.all(np.isfinite(out)):
        raise ProtocolError(f"{sender!r} sent {what} with non-finite values")
    return out


def expect_seed(message: Any, *, sender: str, size: int = 32) -> bytes:
    """Check that a peer's message is a PRG seed of exactly ``size`` bytes.

    Raises
    ------
    ProtocolError
        If ``message`` is not ``bytes`` of that length.

    Examples
    --------
    >>> len(expect_seed(bytes(32), sender="dealer"))
    32
    >>> expect_seed(b"short", sender="dealer")
    Traceback (most recent call last):
    ...
    protocols.errors.ProtocolError: 'dealer' sent a malformed seed; expected 32 bytes
    """
    if not isinstance(message, bytes) or len(message) != size:
        raise ProtocolError(f"{sender!r} sent a malformed seed; expected {size} bytes")
    return message


def expect_array_list(
    message: Any, *, sender: str, shapes: list[tuple[int, ...]], dtype: Any
) -> list[np.ndarray]:
    """Check a list of arrays of agreed shapes and dtype (e.g. two masked openings in one message).

    Raises
    ------
    ProtocolError
        If ``message`` is not a list of ``len(shapes)`` arrays of those shapes and ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> expect_array_list([np.zeros(2, np.uint64)], sender="p1", shapes=[(3,)], dtype=np.uint64)
    Traceback (most recent call last):
    ...
    protocols.errors.ProtocolError: 'p1' sent an array of shape (2,), expected (3,)
    """
    if not isinstance(message, list) or len(message) != len(shapes):
        got = len(message) if isinstance(message, list) else type(message).__name__
        raise ProtocolError(f"expected a list of {len(shapes)} arrays from {sender!r}, got {got}")
    return [
        expect_array(m, sender=sender, shape=s, dtype=dtype) for m, s in zip(message, shapes, strict=True)
    ]
