"""The crypten secure-sum backend over real processes: exactness, reveal-to-one, PPPCA precision."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli import main
from protocols.encoding import FixedPointCodec
from tests.helpers.oracles import align_signs, ring_sum_reference

pytest.importorskip("torch", reason="torch is not installed (README, 'Set up and run': optional line)")

from protocols.backends.crypten_compat import crypten_available
from tests.helpers.torch_worker import CONTRIBUTORS
from tests.multiprocess.test_torch_transport import run_worker_world

pytestmark = [
    pytest.mark.torch,
    pytest.mark.crypten,
    pytest.mark.skipif(
        not crypten_available(), reason="crypten is not installed (pip install --no-deps crypten==0.4.1)"
    ),
]

SCALE = 2**16


def test_crypten_sum_is_exact_where_cryptens_own_decode_is_off_by_one(tmp_path):
    import torch
    from crypten.encoder import FixedPointEncoder

    rng = np.random.default_rng(5)
    values = {name: rng.normal(scale=20.0, size=(4, 6)) for name in CONTRIBUTORS}
    # Entry [0, 0] sums to -131071 / 2^16 and [0, 1] to -196607 / 2^16: raw sums CrypTen decodes 1.0 low.
    values["a0"][0, :2] = [-1.0, -2.0]
    values["a1"][0, :2] = [-0.9999847412109375, -0.9999847412109375]
    values["a2"][0, :2] = [0.0, 0.0]
    for name, value in values.items():
        np.save(tmp_path / f"{name}.npy", value)
    outputs = run_worker_world("sum", tmp_path, "crypten")
    codec = FixedPointCodec(16)
    expected = ring_sum_reference(list(values.values()), codec)
    for total in outputs["r"]["output"]:
        total = np.array(total)
        assert np.array_equal(total, expected)
        # Precision: rounding at encoding only, M * 2^-17 per entry.
        assert np.max(np.abs(total - sum(values.values()))) <= len(values) * 2.0**-17
    assert expected[0, 0] == -131071 / SCALE and expected[0, 1] == -196607 / SCALE
    raw = torch.tensor([-131071, -196607])
    assert FixedPointEncoder(16).decode(raw).tolist() != expected[0, :2].tolist()  # what the guard avoids
    for name in CONTRIBUTORS:
        assert outputs[name]["output"] is None
    # Shares and shapes go through the metered channel: each contributor sends its
    # shape and one int64 share of the 4x6 array to the receiver per sum.
    assert outputs["r"]["report"]["messages_received"] == 2 * 2 * len(CONTRIBUTORS)
    assert outputs["a0"]["report"]["bytes_sent"] > 2 * 4 * 6 * 8


def test_gloo_reduce_would_leak_plaintext_chunks_to_non_receivers(tmp_path):
    """Why the backend does not use CrypTen's ``get_plain_text(dst=...)``.

    gloo's reduce is a ring reduce-scatter plus a gather to ``dst``: every other
    member is left holding a fully reduced chunk, i.e. part of the plaintext.
    """
    shape = (4000,)
    secret = np.arange(1, shape[0] + 1, dtype=np.int64) * 7919
    np.save(tmp_path / "a0.npy", secret)
    np.save(tmp_path / "shape.npy", np.array(shape, dtype=np.int64))
    outputs = run_worker_world("reduce-leak", tmp_path, "crypten")
    assert np.array_equal(np.array(outputs["r"]["output"]), secret)
    leaked = {name: int(np.sum(np.array(outputs[name]["output"]) == secret)) for name in CONTRIBUTORS}
    assert all(count >= shape[0] // 8 for count in leaked.values()), leaked


def _run(tmp_path: Path, name: str, *extra: str) -> dict:
    out = tmp_path / f"{name}.json"
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:wine", "--parties", "3"]
    argv += ["--n-components", "3", "--output", str(out), *extra]
    assert main(argv) == 0
    return json.loads(out.read_text())


def pppca_error_bound(X: np.ndarray, n_parties: int, frac_bits: tuple[int, ...], k: int) -> dict:
    """Bounds on how far two PPPCA runs with these fixed-point precisions can differ.

    A run with ``f`` fractional bits reveals ``C' = (S + N dd^T + R) / (N - 1)`` where
    ``S`` is the exact centred scatter, ``d`` the error of the revealed mean
    (``|d_j| <= M 2^-(f+1) / N``: the column sums are M rounded encodings, the
    count is exact) and ``R`` the rounding of the M Gram encodings
    (``|R_jk| <= M 2^-(f+1)``). Hence ``||C' - C||_2 <= eta_f =
    d M 2^-(f+1) (1 + M 2^-(f+1) / N) / (N - 1)``. Between two runs:
    eta = eta_f1 + eta_f2 (+ float64 round-off, budgeted as 1e-12 ||C||).
    Eigenvalues move by at most eta (Weyl); the i-th component, sign-aligned,
    by at most sqrt(2) * 2 eta / gap_i (Davis-Kahan, Yu-Wang-Samworth form),
    gap_i = min(lambda_{i-1} - lambda_i, lambda_i - lambda_{i+1}).
    """
    n, d = X.shape
    m = n_parties
    eta = sum(d * m * 2.0 ** -(f + 1) * (1 + m * 2.0 ** -(f + 1) / n) / (n - 1) for f in frac_bits)
    eigenvalues = np.sort(np.linalg.eigvalsh(np.cov(X, rowvar=False)))[::-1]
    eta += 1e-12 * eigenvalues[0]
    padded = np.concatenate([[np.inf], eigenvalues, [-np.inf]])
    gaps = np.array([min(padded[i] - padded[i + 1], padded[i + 1] - padded[i + 2]) for i in range(k)])
    return {
        "eigenvalue": eta,
        "component": np.sqrt(2.0) * 2.0 * eta / gaps,
        "mean": sum(m * 2.0 ** -(f + 1) for f in frac_bits) / n,
    }


def test_pppca_with_crypten_matches_in_process_within_the_derived_bound(tmp_path, wine):
    reference = _run(tmp_path, "inprocess")
    crypten_run = _run(
        tmp_path, "crypten", "--transport", "torch", "--backend", "crypten", "--insecure", "--timeout", "30"
    )
    assert set(crypten_run) == set(reference)
    assert crypten_run["backend"] == "crypten"
    bound = pppca_error_bound(wine, 3, (16, 20), 3)
    got = np.array(crypten_run["components"])
    ref = np.array(reference["components"])
    assert np.all(np.linalg.norm(align_signs(got, ref) - ref, axis=1) <= bound["component"])
    assert np.all(
        np.abs(np.array(crypten_run["explained_variance"]) - reference["explained_variance"])
        <= bound["eigenvalue"]
    )
    assert np.all(np.abs(np.array(crypten_run["mean"]) - reference["mean"]) <= bound["mean"])
    # Both runs scale their payloads to the whole ring (mpc_pca.pppca.scaling: f + A and f + B do not
    # depend on f), so CrypTen's 16 bits cost nothing here; the bound above is the unscaled worst case.
    assert set(crypten_run["report"]) == set(reference["report"])
