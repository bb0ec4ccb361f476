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
