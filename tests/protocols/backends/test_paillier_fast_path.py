"""The fast path of the paillier backend: same sums as the reference path, and its cost structure.

Fast path: packed slots, the aggregator's own input multiplied in unrandomized
(``plain_ring``), chunks decrypted as they arrive, a fixed-base table only
when it pays. Reference path: every party encrypts its whole array with
textbook ``r^n``, the ciphertexts are multiplied, the product decrypted once.
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols.backends.additive import AdditiveBackend
from protocols.backends.paillier import CHUNK_CIPHERTEXTS, PaillierBackend, chunk_bounds, chunk_ranges
from protocols.errors import InputValidationError, ProtocolError
from protocols.paillier import cipher
from protocols.paillier import precompute as precompute_module
from protocols.paillier.arrays import decrypt_ring, encrypt_ring, plain_ring, sum_encrypted
from protocols.paillier.keys import generate_keypair
from protocols.paillier.packing import PackingLayout, PackingOverflowError
from protocols.runtime import run_inprocess
from protocols.secure_sum import run_secure_sum, secure_sum

BITS = 512  # test-only key size: 7 slots of 67 bits for M = 8


@pytest.fixture(scope="module")
def keypair():
    return generate_keypair(BITS, allow_insecure_key_size=True)


def _ring_inputs(rng: np.random.Generator, m: int, size: int) -> list[np.ndarray]:
    """Random uint64 ring elements: negatives (top bit set), extremes, and sums that wrap modulo 2^64."""
    parts = [rng.integers(0, 2**64, size=size, dtype=np.uint64) for _ in range(m)]
    extremes = np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1], dtype=np.uint64)
    for part in parts:
        part[: len(extremes)] = extremes[: min(size, len(extremes))]
    return parts


@pytest.mark.parametrize("m", [2, 3, 5, 8])
@pytest.mark.parametrize("packed", [True, False])
def test_chunked_sum_with_a_plain_aggregator_equals_the_reference_path(keypair, m, packed):
    public, private = keypair
    rng = np.random.default_rng(100 + m)
    layout = PackingLayout.for_summands(BITS, m) if packed else None
    slots = 1 if layout is None else layout.slots
    size = (CHUNK_CIPHERTEXTS + 3) * slots + 2  # two chunks, the last partly filled
    parts = _ring_inputs(rng, m, size)
    # reference: everyone encrypts everything with r^n, one product, one decryption
    reference = decrypt_ring(private, sum_encrypted([encrypt_ring(public, p, layout=layout) for p in parts]))
    assert np.array_equal(reference, np.sum(np.stack(parts), axis=0, dtype=np.uint64))  # wraps mod 2^64
    # fast path: the aggregator's part unrandomized, the rest encrypted, chunk by chunk
    ranges = chunk_ranges(size, layout)
    assert len(ranges) == 2 and ranges[1][0] == CHUNK_CIPHERTEXTS
    pieces = []
    for _, (lo, hi) in ranges:
        chunk = [plain_ring(public, parts[0][lo:hi], layout=layout)]
        chunk += [encrypt_ring(public, p[lo:hi], layout=layout) for p in parts[1:]]
        pieces.append(decrypt_ring(private, sum_encrypted(chunk)))
    assert np.array_equal(np.concatenate(pieces), reference)


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_backend_sums_are_bit_identical_to_the_additive_backend(keypair, m):
    rng = np.random.default_rng(7 + m)
    size = 40 * 7 + 5  # more than one chunk of 32 ciphertexts at 7 slots
    values = {f"p{i}": rng.normal(scale=1e3, size=size) * rng.choice([-1, 1], size=size) for i in range(m)}
    for options in ({}, {"precompute": True}, {"packing": False}):
        backend = PaillierBackend(BITS, allow_insecure_key_size=True, keypair=keypair, **options)
        got, _ = run_secure_sum(values, receiver="server", backend=backend)
        expected, _ = run_secure_sum(values, receiver="server", backend=AdditiveBackend())
        assert np.array_equal(got, expected), options


def test_chunks_cover_every_element_once_and_depend_on_size_and_layout_only():
    layout = PackingLayout.for_summands(2048, 3)
    assert layout.slots == 31
    for size in (0, 1, 31, 32, 31 * 32, 31 * 32 + 1, 5050):
        ranges = chunk_ranges(size, layout)
        covered = [i for _, (lo, hi) in ranges for i in range(lo, hi)]
        assert covered == list(range(size))
        offsets = [offset for offset, _ in ranges]
        assert offsets == list(range(0, max(layout.plaintext_count(size), 1), CHUNK_CIPHERTEXTS))
    # a d = 100 Gram triangle: 163 ciphertexts in chunks of 32, the last of 3
    assert [-(-(hi - lo) // 31) for _, (lo, hi) in chunk_ranges(5050, layout)] == [32] * 5 + [3]
    # very large arrays go whole (worker processes may encrypt them)
    assert len(chunk_ranges(31 * 4096, layout)) == 1


def test_chunk_bounds_refuse_an_offset_that_starts_no_chunk_in_constant_time():
    layout = PackingLayout.for_summands(2048, 3)
    assert chunk_bounds(5050, layout, 160) == (160 * 31, 5050)
    for offset in (1, 31, 192, -32, True):
        with pytest.raises(ProtocolError, match="starts at ciphertext"):
            chunk_bounds(5050, layout, offset)
    # a peer claiming 2^60 elements costs nothing to check: one chunk, whose payload is then counted
    assert chunk_bounds(2**60, layout, 0) == (0, 2**60)


def test_an_unrandomized_array_is_never_serialised(keypair):
    public, _ = keypair
    layout = PackingLayout.for_summands(BITS, 2)
    ring = np.arange(9, dtype=np.uint64)
    plain = plain_ring(public, ring, layout=layout)
    assert not plain.randomized
    with pytest.raises(InputValidationError, match=r"unrandomized array of shape \(9,\).*2 ciphertext"):
        plain.to_bytes()
    with pytest.raises(InputValidationError, match="unrandomized"):
        (plain + plain_ring(public, ring, layout=layout)).to_bytes()
    mixed = plain + encrypt_ring(public, ring, layout=layout)
    assert mixed.randomized and len(mixed.to_bytes()) == 2 * public.ciphertext_bytes


def test_a_slot_overflow_is_refused_naming_the_weight_and_the_limit(keypair):
    public, _ = keypair
    layout = PackingLayout.for_summands(BITS, 4)  # 2 headroom bits: at most 4 summands per slot
    arrays = [encrypt_ring(public, np.full(3, 2**64 - 1, dtype=np.uint64), layout=layout) for _ in range(4)]
    total = sum_encrypted(arrays)
    with pytest.raises(PackingOverflowError, match=r"weight 5 .* at most 4"):
        total + plain_ring(public, np.zeros(3, dtype=np.uint64), layout=layout)


def _spy_obfuscators(monkeypatch) -> dict[str, int]:
    """Count the obfuscators every party draws, by its thread's name."""
    import threading

    drawn: dict[str, int] = {}

    def spy(cls):
        real = cls.obfuscators

        def counting(self, count):
            name = threading.current_thread().name.removeprefix("party-")
            drawn[name] = drawn.get(name, 0) + count
            return real(self, count)

        monkeypatch.setattr(cls, "obfuscators", counting)

    spy(cipher.StandardRandomness)
    spy(precompute_module.FixedBaseRandomness)
    return drawn


@pytest.mark.parametrize("packing", [True, False])
def test_cost_structure_ciphertexts_and_obfuscators_per_party(keypair, monkeypatch, packing):
    drawn = _spy_obfuscators(monkeypatch)
    m, size = 4, 300
    rng = np.random.default_rng(5)
    values = {f"p{i}": rng.normal(size=size) for i in range(m)}
    backend = PaillierBackend(BITS, allow_insecure_key_size=True, keypair=keypair, packing=packing, workers=1)
    got, run = run_secure_sum(values, receiver="server", backend=backend)
    assert np.array_equal(got, run_secure_sum(values, receiver="server", backend=AdditiveBackend())[0])
    layout = backend.layout(m)
    slots = 1 if layout is None else layout.slots
    count = -(-size // slots)  # ceil(#values / slots) ciphertexts per array
    # p0 aggregates: it multiplies its plaintexts in and draws no obfuscator; the others one per ciphertext
    assert drawn == {"p1": count, "p2": count, "p3": count}
    width = keypair.public_key.ciphertext_bytes
    for name in ("p0", "p1", "p2", "p3"):
        sent = run.reports[name].bytes_sent
        assert count * width <= sent < count * width + 400 * len(chunk_ranges(size, layout))
    assert run.reports["server"].bytes_received < count * width + 400 * len(chunk_ranges(size, layout))


def test_the_aggregator_encrypts_when_it_is_the_only_encrypting_party(keypair, monkeypatch):
    drawn = _spy_obfuscators(monkeypatch)
    backend = PaillierBackend(BITS, allow_insecure_key_size=True, keypair=keypair, workers=1)
    got, _ = run_secure_sum({"p0": [1.5, -2.0], "p1": [0.25, 4.0]}, receiver="p1", backend=backend)
    assert np.array_equal(got, [1.75, 2.0])
    assert drawn == {"p0": 1}  # p1 receives (adds its input after decrypting); p0 encrypts its own


def test_fixed_base_table_only_when_it_pays_and_sized_for_the_first_batch_that_does(keypair, monkeypatch):
    built: list[tuple[int, int]] = []
    real_init = precompute_module.FixedBaseTable.__init__

    def recording_init(self, base, modulus, exponent_bits, window_bits=8):
        built.append((exponent_bits, window_bits))
        real_init(self, base, modulus, exponent_bits, window_bits)

    monkeypatch.setattr(precompute_module.FixedBaseTable, "__init__", recording_init)
    drawn = _spy_obfuscators(monkeypatch)
    exponent_bits = BITS + 128  # full length, as --paillier-randomness fixed-base
    backend = PaillierBackend(
        BITS,
        allow_insecure_key_size=True,
        keypair=keypair,
        precompute=True,
        exponent_bits=exponent_bits,
        workers=1,
    )
    layout = backend.layout(2)
    small, large = 2 * layout.slots, 60 * layout.slots  # 2 and 60 ciphertexts
    assert not precompute_module.worth_table(exponent_bits, 2, BITS)
    assert precompute_module.worth_table(exponent_bits, 60, BITS)

    def contributor(scale):
        def role(party):
            for size in (small, large, small):
                secure_sum(
                    party, np.full(size, scale), contributors=("a", "b"), receiver="s", backend=backend
                )

        return role

    def server(party):
        return [
            secure_sum(party, None, contributors=("a", "b"), receiver="s", backend=backend) for _ in range(3)
        ]

    run = run_inprocess({"a": contributor(1.5), "b": contributor(-0.25), "s": server})
    assert [float(x[0]) for x in run.outputs["s"]] == [1.25, 1.25, 1.25]
    # b alone encrypts (a aggregates): r^n for the 2 ciphertexts of the first sum, then one table
    # for the 60 of the second, window chosen for 60, kept for the third sum
    assert built == [(exponent_bits, precompute_module.best_window(exponent_bits, 60))]
    assert drawn == {"b": 2 + 60 + 2}


def test_best_window_minimises_the_table_cost():
    for exponent_bits in (1024, 2176):
        for count in (1, 4, 50, 167, 2000, 16_000):
            w = precompute_module.best_window(exponent_bits, count)
            cost = precompute_module.table_cost(exponent_bits, w, count)
            assert cost == min(
                precompute_module.table_cost(exponent_bits, v, count)
                for v in range(1, precompute_module.MAX_AUTO_WINDOW_BITS + 1)
            )
    assert precompute_module.best_window(2176, 167) == 6  # a d = 100 Gram triangle
    with pytest.raises(InputValidationError, match="count"):
        precompute_module.best_window(2176, -1)
