"""IKNP correlated OTs and Gilboa bit products: correct, and each end's view independent of the other's input."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.errors import ProtocolError
from protocols.ot import extension, matrix
from protocols.ot.links import setup_links, shared_times_private_bits
from protocols.runtime import run_inprocess
from protocols.testing.views import check_view_independence

_U = np.uint64


def _pair(sender_program, receiver_program, timeout: float = 120.0) -> dict:
    def sender(party):
        return sender_program(party, setup_links(party, ["r"]).senders["r"])

    def receiver(party):
        return receiver_program(party, setup_links(party, ["s"]).receivers["s"])

    return run_inprocess({"s": sender, "r": receiver}, timeout=timeout).outputs


@pytest.mark.parametrize("sizes", [[100_003], [1, 7, 8, 9], [0, 5]])
def test_correlated_ots_share_choice_times_correlation(monkeypatch, sizes):
    monkeypatch.setattr(extension, "CHUNK_OTS", 4096)  # many chunks per batch, a partial last one
    rng = np.random.default_rng(len(sizes))
    choices = [rng.integers(0, 2, size=n, dtype=np.uint8) for n in sizes]
    words = [rng.integers(0, 2**64, size=n, dtype=_U) for n in sizes]
    if sizes[0] > 10:
        words[0][:2] = [_U(2**64 - 1), _U(2**63)]

    def sender(party, end):
        return [end.send_correlated(party, w) for w in words], end.done

    def receiver(party, end):
        return [end.finish(party, end.start(party, c)) for c in choices], end.done

    out = _pair(sender, receiver)
    for s_share, r_share, c, w in zip(out["s"][0], out["r"][0], choices, words, strict=True):
        assert np.array_equal(s_share + r_share, w * c.astype(_U))
    assert out["s"][1] == out["r"][1] == sum(sizes)  # both ends count every OT (the hash tweak)


def test_bit_products_among_five_providers(monkeypatch):
    monkeypatch.setattr(extension, "CHUNK_OTS", 1024)
    names = [f"p{i}" for i in range(5)]
    rng = np.random.default_rng(5)
    shares = {p: rng.integers(0, 2**64, size=(30, 64), dtype=_U) for p in names}
    bits = rng.integers(0, 2, size=(30, 64), dtype=np.uint8)

    def role(party):
        links = setup_links(party, [p for p in names if p != party.name])
        return [
            shared_times_private_bits(
                party, links, names, owner, shares[party.name], bits if party.name == owner else None
            )
            for owner in ("p3", "p0")
        ]

    out = run_inprocess(dict.fromkeys(names, role), timeout=120).outputs
    total = sum(shares.values())
    for k in range(2):
        assert np.array_equal(sum(out[p][k] for p in names), total * bits.astype(_U))


def test_a_wrongly_sized_matrix_is_refused_naming_the_peer():
    def sender(party, end):
        return end.send_correlated(party, np.zeros(64, dtype=_U))

    def receiver(party, end):
        party.send("s", np.zeros((matrix.ROWS, 7), dtype=np.uint8))  # 56 OTs' worth, not 64
        return None

    with pytest.raises(ProtocolError, match=r"'r' sent an array of shape \(128, 7\), expected \(128, 8\)"):
        _pair(sender, receiver, timeout=30)


N_VIEW = 4096


def _views(sender_words: np.ndarray, receiver_bits: np.ndarray):
    """Roles whose inputs differ between runs: the sender's correlations, the receiver's choices."""

    def sender(party):
        end = setup_links(party, ["r"]).senders["r"]
        end.send_correlated(party, sender_words)
        return None

    def receiver(party):
        end = setup_links(party, ["s"]).receivers["s"]
        end.finish(party, end.start(party, receiver_bits))
        return None

    return {"s": sender, "r": receiver}


def _check_views():
    zeros_w, zeros_b = np.zeros(N_VIEW, dtype=_U), np.zeros(N_VIEW, dtype=np.uint8)
    rng = np.random.default_rng(11)
    words, bits = rng.integers(0, 2**64, size=N_VIEW, dtype=_U), np.ones(N_VIEW, dtype=np.uint8)
    bits[::3] = 0
    return check_view_independence(
        lambda: _views(zeros_w, zeros_b), lambda: _views(words, bits), parties=["s", "r"], repeats=2
    )


def test_neither_end_sees_the_others_input():
    report = _check_views()
    assert {t.party for t in report.tests} == {"s", "r"}


def test_the_view_test_catches_a_pad_that_is_not_hashed(monkeypatch):
    """Without the hash, ``tau`` carries the pattern of ``Delta``: zero bits where ``Delta`` is 0 (x = 0)."""

    def unhashed(rows, first_index):
        return np.ascontiguousarray(rows[:, :8]).view("<u8").reshape(-1).astype(_U)

    monkeypatch.setattr(extension, "hash_rows", unhashed)
    with pytest.raises(AssertionError, match=r"view independence failed(.|\n)*party 'r'"):
        _check_views()
