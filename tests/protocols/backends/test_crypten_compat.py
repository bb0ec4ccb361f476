"""CrypTen on torch 2.13: the import shim, and the encoder bugs the backend guards against."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from protocols.encoding import FixedPointCodec

pytest.importorskip("torch", reason="torch is not installed (README, 'Set up and run': optional line)")

from protocols.backends.crypten_compat import crypten_available, import_crypten

pytestmark = [
    pytest.mark.crypten,
    pytest.mark.skipif(
        not crypten_available(), reason="crypten is not installed (pip install --no-deps crypten==0.4.1)"
    ),
]

SCALE = 2**16
#: Raw fixed-point values (16 fractional bits) that CrypTen 0.4.1 decodes 1.0 too low.
CRYPTEN_DECODE_FAILURES = np.array([-131071, -196607, -196606, -262142, -4194303], dtype=np.int64)


def test_importing_our_modules_touches_neither_crypten_nor_sys_modules():
    code = (
        "import sys, protocols, protocols.backends.crypten_compat, protocols.backends.crypten, mpc_pca.cli;"
        "bad = [m for m in ('crypten', 'torch.onnx._internal.registration') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_shim_makes_crypten_0_4_1_importable():
    crypten = import_crypten()
    assert crypten.__version__ == "0.4.1"
    assert "torch.onnx._internal.registration" in sys.modules
    assert import_crypten() is crypten  # idempotent


def test_crypten_decode_is_off_by_exactly_one_for_some_negative_values():
    """The bug: floor division by ``scale - 1``; e.g. -131071 / 2^16 = -1.99998 decodes as -2.99998.

    If this test fails, CrypTen fixed its decoder; the guard (never calling it) stays correct.
    """
    import torch
    from crypten.encoder import FixedPointEncoder

    decoded = FixedPointEncoder(16).decode(torch.from_numpy(CRYPTEN_DECODE_FAILURES)).double().numpy()
    exact = CRYPTEN_DECODE_FAILURES / SCALE
    assert np.allclose(decoded - exact, -1.0, rtol=0, atol=1e-3)


def test_our_decode_is_exact_where_crypten_fails_and_everywhere_near_zero():
    codec = FixedPointCodec(16)
    assert np.array_equal(
        codec.decode(CRYPTEN_DECODE_FAILURES.view(np.uint64)), CRYPTEN_DECODE_FAILURES / SCALE
    )
    raw = np.arange(-(2**21), 2**21, dtype=np.int64)
    assert np.array_equal(codec.decode(raw.view(np.uint64)), raw / SCALE)


def test_crypten_encode_truncates_and_ours_rounds():
    import torch
    from crypten.encoder import FixedPointEncoder

    x = np.array([-0.9, 0.9, 1.7, -1.7, 2.5]) / SCALE
    truncated = FixedPointEncoder(16).encode(torch.from_numpy(x)).numpy()
    assert truncated.tolist() == [0, 0, 1, -1, 2]
    rounded = FixedPointCodec(16).encode(x).view(np.int64)
    assert rounded.tolist() == [-1, 1, 2, -2, 2]  # round half to even
