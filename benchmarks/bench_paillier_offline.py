"""Part 3 of :mod:`benchmarks.bench_paillier` (``--offline-online``): offline/online Paillier encryption.

The offline/online split of textbook encryption
(:mod:`protocols.paillier.offline`), offline and online times reported
separately, against SecretFlow HEU's encryptor when ``sf-heu`` is installed
(optional).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

from protocols.encoding import FixedPointCodec
from protocols.paillier import cipher
from protocols.paillier.arrays import decrypt_ring, encrypt_ring
from protocols.paillier.keys import generate_keypair
from protocols.paillier.packing import PackingLayout


def offline_online(quick: bool, key_bits: int) -> dict[str, Any]:
    """Offline ``r^n`` precomputation vs online encryption, and SecretFlow HEU where it installs.

    Offline: :class:`~protocols.paillier.offline.ObfuscatorPool` fills its stock
    with textbook obfuscators on all usable CPUs (DCR only). Online: one modular
    multiplication per ciphertext, one value per ciphertext (``unpacked``, like
    for like with HEU's ``encrypt_raw``) or 31 values per ciphertext (``packed``).
    Reported as values/s, offline and online separately, medians of interleaved repeats.
    HEU's ZPaillier encryptor (``sf-heu``, optional) uses DJN short-exponent
    randomness, an assumption beyond DCR; its time is all online. ``key_bits``: the
    modulus size (:data:`benchmarks.bench_paillier.KEY_BITS`).
    """
    from protocols.paillier.offline import ObfuscatorPool
    from protocols.runtime import usable_cpus

    repeats = 3 if quick else 5
    public, private = generate_keypair(key_bits)
    codec = FixedPointCodec()
    layout = PackingLayout.for_summands(key_bits, 4)
    count = 310 if quick else 1550
    values = codec.encode(np.random.default_rng(1).normal(scale=1e3, size=count), n_summands=4)
    times: dict[str, list[float]] = {
        k: []
        for k in (
            "offline_unpacked",
            "online_unpacked",
            "offline_packed",
            "online_packed",
            "standard_unpacked",
        )
    }
    heu = None
    try:
        from heu import phe as heu_phe

        heu_kit = heu_phe.setup(heu_phe.SchemaType.ZPaillier, key_bits)
        heu = heu_kit.encryptor()
        times["heu_unpacked"] = []
        ints = [int(v) for v in values.view(np.int64)]
    except ImportError as exc:
        heu_reason = f"sf-heu not importable: {exc}"
    standard_subset = values[: max(31, count // 10)]  # r^n online is slow: a tenth, rated per value
    for _ in range(repeats):
        for packed, lay in (("unpacked", None), ("packed", layout)):
            pool = ObfuscatorPool(public)
            n_ct = len(values) if lay is None else -(-len(values) // lay.slots)
            start = time.perf_counter()
            pool.precompute(n_ct)
            times[f"offline_{packed}"].append(time.perf_counter() - start)
            start = time.perf_counter()
            enc = encrypt_ring(public, values, layout=lay, randomness=pool)
            times[f"online_{packed}"].append(time.perf_counter() - start)
            if pool.online_shortfall or not np.array_equal(decrypt_ring(private, enc), values):
                raise RuntimeError(f"offline/online {packed}: round trip failed")
        start = time.perf_counter()
        encrypt_ring(public, standard_subset, randomness=cipher.StandardRandomness(public))
        times["standard_unpacked"].append((time.perf_counter() - start) * len(values) / len(standard_subset))
        if heu is not None:
            start = time.perf_counter()
            for v in ints:
                heu.encrypt_raw(v)
            times["heu_unpacked"].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in times.items()}
    per_second = {k: count / v for k, v in medians.items()}
    out: dict[str, Any] = {
        "values": count,
        "workers_offline": usable_cpus(),
        "median_seconds": medians,
        "values_per_second": per_second,
        "online_over_standard": {
            "unpacked": medians["standard_unpacked"] / medians["online_unpacked"],
            "packed": medians["standard_unpacked"] / medians["online_packed"],
        },
    }
    if heu is not None:
        out["vs_heu_encrypt"] = {
            "online_unpacked": medians["heu_unpacked"] / medians["online_unpacked"],
            "online_packed": medians["heu_unpacked"] / medians["online_packed"],
            "offline_plus_online_unpacked": medians["heu_unpacked"]
            / (medians["online_unpacked"] + medians["offline_unpacked"]),
            "offline_plus_online_packed": medians["heu_unpacked"]
            / (medians["online_packed"] + medians["offline_packed"]),
        }
    else:
        out["heu_skipped"] = heu_reason
    return out
