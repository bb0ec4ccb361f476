"""Issue 35: --eigengap has a range with both ends justified, and a false assumed gap is refused.

Today ``--eigengap 1e-300`` raised ZeroDivisionError and ``eigengap=0.9`` on a
spectrum whose real gap is 0.3 returned components 1.6e-3 off with exit 0.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from mpc_pca.cli import main
from mpc_pca.pppca.components import MAX_EIGENGAP, MIN_EIGENGAP, check_assumed_gap
from protocols.errors import InputValidationError, ProtocolError


@pytest.mark.parametrize("gap", ["1e-300", "0.999999", "nan", "1e-9", "0.95"])
def test_the_cli_refuses_an_eigengap_outside_the_range_in_one_line(capsys, gap):
    argv = [
        "run",
        "--protocol",
        "pppca-ss",
        "--data",
        "builtin:wine",
        "--reveal",
        "components",
        "--eigengap",
        gap,
    ]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--eigengap {float(gap)!r} is out of range" in err
    assert "between 1e-08 and 0.9" in err


@pytest.mark.parametrize("gap", [1e-300, 0.999999, MIN_EIGENGAP / 2, 1.0])
def test_the_estimator_parameter_has_the_same_range(gap):
    with pytest.raises(InputValidationError, match=rf"eigengap={gap!r} is invalid; .* >= 1e-08 and <= 0\.9"):
        PPPCA(2, reveal="components", eigengap=gap).fit([np.eye(3), np.eye(3)])


def _spectrum_parts(spectrum, n=3000):
    rng = np.random.default_rng(0)
    d = len(spectrum)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    z = rng.standard_normal((n, d))
    z -= z.mean(axis=0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T))).T  # sample covariance exactly the identity
    x = (z * np.sqrt(spectrum)) @ q.T
    return np.array_split(x, 3), x


def test_an_assumed_gap_larger_than_the_real_one_is_refused_before_any_component_is_sent():
    """Real gap 1 - 3.5/5 = 0.3; assumed 0.9. Today: components 1.6e-3 off, exit 0."""
    parts, _ = _spectrum_parts([10.0, 5.0, 3.5, 3.5, 3.5, 3.5])
    with pytest.raises(
        ProtocolError, match=r"assumed eigengap=0\.9 is false .* a gap of at most 0\.3; no component"
    ):
        PPPCA(2, reveal="components", eigengap=MAX_EIGENGAP).fit(parts)


def test_a_true_assumed_gap_still_gives_accurate_components():
    parts, x = _spectrum_parts([10.0, 5.0, 3.5, 3.5, 3.5, 3.5])
    model = PPPCA(2, reveal="components", eigengap=0.25).fit(parts)
    assert np.max(subspace_angles(model.components_.T, PCA(2).fit(x).components_.T)) < 1e-4


def test_the_spectrum_check_is_exact_at_its_edge():
    values = np.array([10.0, 5.0])
    # d = 6, k = 2: the rest's mean is (20 - 15) / 4 = 1.25; the gap is at most 1 - 1.25 / 5 = 0.75
    check_assumed_gap(values, 20.0, 6, 0.75, eta=0.0)
    with pytest.raises(ProtocolError, match=r"eigengap=0\.76 is false .* lambda_3 >= 1\.25 .* at most 0\.75"):
        check_assumed_gap(values, 20.0, 6, 0.76, eta=0.0)
    check_assumed_gap(values, 20.0, 6, 0.76, eta=0.05)  # within the eigenvalues' error bound: not refused
