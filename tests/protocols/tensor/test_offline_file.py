"""An offline store on disk: sealed with AES-256-GCM, refused when changed, read once."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import InputValidationError, ProtocolError
from protocols.tensor.offline_file import load_store, new_store_key, save_store
from protocols.tensor.offline_store import Item, OfflineStore, Request

_U = np.uint64


def a_store() -> OfflineStore:
    rng = np.random.default_rng(0)
    ring = lambda *shape: rng.integers(0, 2**64, size=shape, dtype=_U)  # noqa: E731
    return OfflineStore(
        [
            Item(0, Request("matmul", ((3, 4), (4, 2))), (ring(3, 4), ring(4, 2), ring(3, 2))),
            Item(1, Request("truncation", ((5,),)), (ring(5, 64) & _U(1),)),
            Item(2, Request("mask", ((2, 3),)), (ring(2, 3),)),
            Item(3, Request("fixed", ((3, 4),), mask=2), (ring(3, 4), ring(2, 4))),
        ]
    )


def test_a_saved_store_loads_equal_once_and_its_file_is_gone(tmp_path):
    store, key, path = a_store(), new_store_key(), tmp_path / "store.bin"
    save_store(store, path, key)
    assert not any(bytes(a.tobytes()[:16]) in path.read_bytes() for item in store.items for a in item.arrays)
    loaded = load_store(path, key)
    assert not path.exists()  # read once
    assert [i.request for i in loaded.items] == [i.request for i in store.items]
    for a, b in zip(loaded.items, store.items, strict=True):
        assert a.ident == b.ident and all(
            np.array_equal(x, y) for x, y in zip(a.arrays, b.arrays, strict=True)
        )
    ident, a, b, c = loaded.take_triple("matmul", (3, 4), (4, 2))
    assert ident == 0 and np.array_equal(c, store.items[0].arrays[2])
    with pytest.raises(FileNotFoundError):
        load_store(path, key)


def test_a_changed_file_or_another_key_is_refused_and_the_file_kept(tmp_path):
    key, path = new_store_key(), tmp_path / "store.bin"
    save_store(a_store(), path, key)
    with pytest.raises(ProtocolError, match="does not open with this key, or it was changed"):
        load_store(path, new_store_key())
    raw = bytearray(path.read_bytes())
    raw[40] ^= 1
    changed = tmp_path / "changed.bin"
    changed.write_bytes(bytes(raw))
    with pytest.raises(ProtocolError, match="does not open with this key, or it was changed"):
        load_store(changed, key)
    (tmp_path / "short.bin").write_bytes(b"x" * 5)
    with pytest.raises(ProtocolError, match="too short"):
        load_store(tmp_path / "short.bin", key)
    assert path.exists() and changed.exists()  # nothing was consumed
    assert len(load_store(path, key)) == 4


def test_saving_refuses_a_bad_key_an_existing_file_or_a_used_store(tmp_path):
    path = tmp_path / "store.bin"
    with pytest.raises(InputValidationError, match="32 bytes, got 16 bytes"):
        save_store(a_store(), path, b"k" * 16)
    save_store(a_store(), path, new_store_key())
    with pytest.raises(FileExistsError):
        save_store(a_store(), path, new_store_key())
    used = a_store()
    used.take_mask((2, 3))
    with pytest.raises(InputValidationError, match="handed out 1 items"):
        save_store(used, tmp_path / "other.bin", new_store_key())
