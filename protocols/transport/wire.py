"""A small, non-executable binary message format.

Peers never exchange pickles: a message is a tree of ``None``, ``bool``,
``int`` (arbitrary size), ``float``, ``str``, ``bytes``, numeric
``numpy.ndarray`` (sent as dtype + shape + raw little-endian bytes), ``list``
(tuples are sent as lists) and ``dict`` with ``str`` keys. Decoding builds only
those types, checks every length against the buffer, and refuses object,
structured or non-numeric dtypes, so hostile bytes can at worst raise
:class:`~protocols.errors.WireFormatError`.
"""

from __future__ import annotations

import re
import struct
from typing import Any

import numpy as np

from protocols.errors import WireFormatError

_ALLOWED_DTYPE_KINDS = frozenset("biufc")
_MAX_NDIM = 32
_MAX_DEPTH = 64
_ALIGN = 8

# What a dtype string on the wire may look like: byte order, kind, item size.
_DTYPE_TEXT = re.compile(r"[<>|=]?[biufc][0-9]{1,2}")

_LEN = struct.Struct("<Q")
_F64 = struct.Struct("<d")


def encode_message(obj: Any) -> bytes:
    """Serialise a message tree to bytes (see the module docstring for the types)."""
    return b"".join(encode_message_parts(obj))


def encode_message_parts(obj: Any) -> list[bytes | memoryview]:
    """The pieces whose concatenation is :func:`encode_message`'s output.

    Array data is a view of the array (or of a contiguous copy), not a copy,
    so a transport can write the message into its own buffer with a single
    copy. The views are only valid while the arrays are left unchanged.
    """
    out: list[bytes | memoryview] = []
    _encode(obj, out, 0)
    return out


def _encode(obj: Any, out: list[bytes | memoryview], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise TypeError(f"message nests deeper than {_MAX_DEPTH} levels")
    if obj is None:
        out.append(b"N")
    elif isinstance(obj, (bool, np.bool_)):
        out.append(b"T" if obj else b"F")
    elif isinstance(obj, (int, np.integer)):
        value = int(obj)
        raw = value.to_bytes((value.bit_length() + 8) // 8 or 1, "little", signed=True)
        out += [b"I", _LEN.pack(len(raw)), raw]
    elif isinstance(obj, (float, np.floating)):
        out += [b"D", _F64.pack(float(obj))]
    elif isinstance(obj, str):
        raw = obj.encode("utf-8")
        out += [b"S", _LEN.pack(len(raw)), raw]
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        raw = bytes(obj)
        out += [b"B", _LEN.pack(len(raw)), raw]
    elif isinstance(obj, np.ndarray):
        _encode_array(obj, out)
    elif isinstance(obj, (list, tuple)):
        out += [b"L", _LEN.pack(len(obj))]
        for item in obj:
            _encode(item, out, depth + 1)
    elif isinstance(obj, dict):
        out += [b"M", _LEN.pack(len(obj))]
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(f"message dict keys must be str, got {type(key).__name__}")
            _encode(key, out, depth + 1)
            _encode(value, out, depth + 1)
    else:
        raise TypeError(f"type {type(obj).__name__} cannot be sent over a channel")


def _encode_array(arr: np.ndarray, out: list[bytes | memoryview]) -> None:
    if arr.dtype.kind not in _ALLOWED_DTYPE_KINDS or arr.dtype.fields is not None:
        raise TypeError(f"arrays of dtype {arr.dtype} cannot be sent; use a numeric dtype")
    if arr.ndim > _MAX_NDIM:
        raise TypeError(f"arrays with more than {_MAX_NDIM} dimensions cannot be sent")
    dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
    data = memoryview(np.ascontiguousarray(arr, dtype=dtype).reshape(-1).view(np.uint8).data)
    dtype_str = dtype.str.encode("ascii")
    header = [b"A", bytes([len(dtype_str)]), dtype_str, bytes([arr.ndim])]
    header += [_LEN.pack(dim) for dim in arr.shape]
    header.append(_LEN.pack(len(data)))
    # Pad so the data starts 8-byte aligned within the message: a receiver
    # may then use it in place as an aligned array.
    data_start = sum(len(part) for part in out) + sum(len(part) for part in header) + 1
    pad = -data_start % _ALIGN
    out += [*header, bytes([pad]) + bytes(pad), data]


def decode_message(data: bytes | bytearray | memoryview, *, copy_arrays: bool = True) -> Any:
    """Parse bytes produced by :func:`encode_message`.

    Parameters
    ----------
    data : bytes-like
        The message.
    copy_arrays : bool, default=True
        ``False`` lets arrays be views into ``data`` instead of copies. Only a
        transport that hands over a fresh, writable buffer nobody else uses may
        pass it; views into a read-only buffer are copied regardless.

    Raises
    ------
    WireFormatError
        If the bytes are truncated, have trailing garbage, an unknown tag, or an
        array whose header is inconsistent with its payload.
    """
    view = memoryview(data).cast("B")
    obj, pos = _decode(view, 0, 0, copy_arrays or view.readonly)
    if pos != len(view):
        raise WireFormatError(f"{len(view) - pos} trailing bytes after message")
    return obj


def _take(view: memoryview, pos: int, n: int) -> tuple[memoryview, int]:
    end = pos + n
    if n < 0 or end > len(view):
        raise WireFormatError(f"message truncated: need {n} bytes at offset {pos}, have {len(view) - pos}")
    return view[pos:end], end


def _length(view: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = _take(view, pos, _LEN.size)
    return _LEN.unpack(raw)[0], pos


def _decode(view: memoryview, pos: int, depth: int, copy: bool) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise WireFormatError(f"message nests deeper than {_MAX_DEPTH} levels")
    tag_raw, pos = _take(view, pos, 1)
    tag = bytes(tag_raw)
    if tag == b"N":
        return None, pos
    if tag == b"T":
        return True, pos
    if tag == b"F":
        return False, pos
    if tag == b"I":
        n, pos = _length(view, pos)
        raw, pos = _take(view, pos, n)
        return int.from_bytes(raw, "little", signed=True), pos
    if tag == b"D":
        raw, pos = _take(view, pos, _F64.size)
        return _F64.unpack(raw)[0], pos
    if tag in (b"S", b"B"):
        n, pos = _length(view, pos)
        raw, pos = _take(view, pos, n)
        if tag == b"B":
            return bytes(raw), pos
        try:
            return str(raw, "utf-8"), pos
        except UnicodeDecodeError as exc:
            raise WireFormatError("string field is not valid UTF-8") from exc
    if tag == b"A":
        return _decode_array(view, pos, copy)
    if tag in (b"L", b"M"):
        count, pos = _length(view, pos)
        if count > len(view) - pos:  # every item takes at least one byte
            raise WireFormatError(f"container claims {count} items but only {len(view) - pos} bytes remain")
        if tag == b"L":
            items = []
            for _ in range(count):
                item, pos = _decode(view, pos, depth + 1, copy)
                items.append(item)
            return items, pos
        mapping = {}
        for _ in range(count):
            key, pos = _decode(view, pos, depth + 1, copy)
            if not isinstance(key, str):
                raise WireFormatError(f"dict key must be a string, got {type(key).__name__}")
            mapping[key], pos = _decode(view, pos, depth + 1, copy)
        return mapping, pos
    raise WireFormatError(f"unknown tag {tag!r} at offset {pos - 1}")


def _decode_array(view: memoryview, pos: int, copy: bool) -> tuple[np.ndarray, int]:
    n, pos = _take(view, pos, 1)
    dtype_raw, pos = _take(view, pos, n[0])
    text = bytes(dtype_raw).decode("latin-1")
    if not _DTYPE_TEXT.fullmatch(text):
        raise WireFormatError(f"invalid array dtype {bytes(dtype_raw)!r}")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError) as exc:
        raise WireFormatError(f"invalid array dtype {bytes(dtype_raw)!r}") from exc
    if dtype.kind not in _ALLOWED_DTYPE_KINDS or dtype.fields is not None or dtype.hasobject:
        raise WireFormatError(f"refusing array of dtype {dtype}")
    ndim_raw, pos = _take(view, pos, 1)
    ndim = ndim_raw[0]
    if ndim > _MAX_NDIM:
        raise WireFormatError(f"array claims {ndim} dimensions, at most {_MAX_NDIM} are allowed")
    shape = []
    for _ in range(ndim):
        dim, pos = _length(view, pos)
        if dim > len(view):
            # No array we send has an axis longer than its whole message is bytes.
            raise WireFormatError(f"array claims an axis of length {dim} in a message of {len(view)} bytes")
        shape.append(dim)
    nbytes, pos = _length(view, pos)
    if nbytes > len(view) - pos:
        raise WireFormatError(f"array claims {nbytes} payload bytes but only {len(view) - pos} remain")
    expected = dtype.itemsize * int(np.prod(shape, dtype=object))
    if nbytes != expected:
        raise WireFormatError(
            f"array payload has {nbytes} bytes but dtype {dtype} and shape {tuple(shape)} need {expected}"
        )
    pad_raw, pos = _take(view, pos, 1)
    if pad_raw[0] >= _ALIGN:
        raise WireFormatError(f"array padding of {pad_raw[0]} bytes; at most {_ALIGN - 1} are used")
    _, pos = _take(view, pos, pad_raw[0])
    raw, pos = _take(view, pos, nbytes)
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return (arr.copy() if copy else arr), pos
