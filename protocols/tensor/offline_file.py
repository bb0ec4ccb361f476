"""An offline store kept on disk between the offline and the online phase, encrypted, read once.

A provider that runs its offline phase ahead of time (the night before, say)
keeps its :class:`~protocols.tensor.offline_store.OfflineStore` in a file:
:func:`save_store` writes every item (number, request, arrays) in the typed
wire format of :mod:`protocols.transport.wire` (no pickle) and seals it with
AES-256-GCM under a 32-byte key the provider keeps apart from the file; the
file's purpose and format version are the associated data. :func:`load_store`
checks the tag before it decodes anything (a changed or truncated file, or a
wrong key, is refused), and **removes the file** before it returns the store:
correlated randomness used in two runs would let their openings be
subtracted, so a store is read once, as the ledger hands each item out once.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from protocols.errors import InputValidationError, ProtocolError
from protocols.tensor.offline_store import Item, OfflineStore, Request
from protocols.transport.wire import decode_message, encode_message

#: The associated data: what the file is and its format version.
HEADER = b"mpc-pca offline store v1"
KEY_BYTES = 32
_NONCE_BYTES = 12


def new_store_key() -> bytes:
    """A fresh 32-byte AES-256-GCM key from :mod:`secrets` (keep it apart from the file)."""
    return secrets.token_bytes(KEY_BYTES)


def _check_key(key: object) -> bytes:
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        size = f"{len(key)} bytes" if isinstance(key, bytes) else type(key).__name__
        raise InputValidationError(f"an offline store key is {KEY_BYTES} bytes, got {size}")
    return key


def _item_record(item: Item) -> dict[str, Any]:
    request = item.request
    return {
        "ident": item.ident,
        "kind": request.kind,
        "shapes": [list(shape) for shape in request.shapes],
        "mask": request.mask,
        "arrays": list(item.arrays),
    }


def _item_from_record(record: Any) -> Item:
    if not isinstance(record, dict) or set(record) != {"ident", "kind", "shapes", "mask", "arrays"}:
        raise ProtocolError("the offline store file holds an item that is not an item record")
    arrays = record["arrays"]
    if not isinstance(arrays, list) or not all(
        isinstance(a, np.ndarray) and a.dtype == np.uint64 for a in arrays
    ):
        raise ProtocolError(
            f"item {record['ident']!r} of the offline store file has arrays that are not uint64"
        )
    shapes = tuple(tuple(int(n) for n in shape) for shape in record["shapes"])
    request = Request(record["kind"], shapes, mask=int(record["mask"]))
    return Item(int(record["ident"]), request, tuple(arrays))


def save_store(store: OfflineStore, path: str | os.PathLike[str], key: bytes) -> Path:
    """Encrypt ``store``'s untaken items to ``path`` (created; an existing file is refused).

    Raises
    ------
    InputValidationError
        A key that is not 32 bytes, a store from which items were already
        taken (its numbering would not survive), or an existing ``path``.
    """
    key = _check_key(key)
    if store.remaining != len(store):
        raise InputValidationError(
            f"the store has handed out {len(store) - store.remaining} items; only a fresh store is saved"
        )
    target = Path(path)
    plain = encode_message([_item_record(item) for item in store.items])
    nonce = secrets.token_bytes(_NONCE_BYTES)
    sealed = nonce + AESGCM(key).encrypt(nonce, plain, HEADER)
    with open(target, "xb") as out:  # never overwrite: two stores must not share a file
        out.write(sealed)
    return target


def load_store(path: str | os.PathLike[str], key: bytes) -> OfflineStore:
    """Decrypt the store at ``path``, then remove the file, and return the store (readable once).

    Raises
    ------
    ProtocolError
        The file was changed or truncated, or ``key`` is not the one it was
        sealed with (nothing is decoded then), or it decodes to something
        other than a store.
    """
    key = _check_key(key)
    target = Path(path)
    sealed = target.read_bytes()
    if len(sealed) <= _NONCE_BYTES:
        raise ProtocolError(f"{target} is too short to be an offline store file")
    try:
        plain = AESGCM(key).decrypt(sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:], HEADER)
    except InvalidTag:
        raise ProtocolError(f"{target} does not open with this key, or it was changed") from None
    records = decode_message(plain)
    if not isinstance(records, list):
        raise ProtocolError(f"{target} does not hold a list of items")
    store = OfflineStore([_item_from_record(record) for record in records])
    target.unlink()  # read once: the same masks must never serve two runs
    return store
