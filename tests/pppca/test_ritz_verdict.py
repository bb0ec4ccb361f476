"""Issue 35: with ``reveal="components"`` a false assumed eigengap ends in a Ritz-residual verdict.

The server's trace check (:func:`mpc_pca.pppca.components.check_assumed_gap`) refuses an assumed
gap only when the MEAN of the other eigenvalues contradicts it; a false gap whose mass sits in
``lambda_{k+1}`` alone passes it, the ladder stops early, and the providers' check 4 (the secure
Ritz residual ``(R V r - V Lambda r) / lambda_1``) refuses the answer. Before this change its error
accused an honest server of a wrong answer; now it says what the residual proves and names the
assumed eigengap, the residual and the tolerance.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from mpc_pca.pppca.components import check_assumed_gap
from protocols.errors import ProtocolError
from tests.pppca.test_answer_check import cheating_server, random_orthonormal, run

#: What the components-mode verdict must say (k = 2, eigengap 0.5).
VERDICT = (
    r"the components 'server' sent are not eigenvectors of the pooled covariance within the tolerance"
    r"(?: \(as opened and reported by provider0\))?: C T - T Lambda is not zero; the secure eigensolve's "
    r"Ritz residual \|\(C T - T Lambda\) e_j\| / lambda_1 = (?P<residual>[0-9.e-]+) in column "
    r"j=(?P<column>[0-9]+), allowed (?P<allowed>[0-9.e-]+) per column\. Either the assumed eigengap=0\.5 "
    r"is false for these data "
    r"\(lambda_{k1} is closer to lambda_{k} than 1 - 0\.5 allows, .* smaller eigengap .* or the server "
    r"\(the eigensolve's dealer\) deviated; refusing to use its T$"
)


def _parts(spectrum, n=3000):
    """Three providers' rows whose sample covariance has exactly ``spectrum`` (a random basis)."""
    rng = np.random.default_rng(0)
    d = len(spectrum)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    z = rng.standard_normal((n, d))
    z -= z.mean(axis=0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T))).T
    x = (z * np.sqrt(spectrum)) @ q.T
    return np.array_split(x, 3), x


def _verdict(k: int) -> str:
    return VERDICT.replace("{k1}", str(k + 1)).replace("{k}", str(k))


def _refusal(parts, k: int, eigengap: float) -> tuple[str, float, float]:
    with pytest.raises(ProtocolError) as caught:
        PPPCA(k, reveal="components", eigengap=eigengap).fit(parts)
    message = str(caught.value)
    found = re.search(_verdict(k), message)
    assert found, message
    residual, allowed = float(found["residual"]), float(found["allowed"])
    assert residual > allowed > 0
    assert "sent a wrong answer" not in message  # the honest server is not accused
    return message, residual, allowed


def test_a_false_gap_in_lambda_k_plus_1_alone_is_a_ritz_verdict_naming_the_gap():
    """Spectrum 10, 5, 4.9, 1, 1, 1; k = 2: the real gap lambda_2 -> lambda_3 is 2 %, eigengap=0.5.

    The trace check passes (the rest's mean 1.975 is below 0.5 lambda_2 = 2.5). The ladder's
    residual sits in the second Ritz vector (1-2x the tolerance). With one random combination
    ``r`` it passed when ``r`` nearly missed that column (8 of 30 fits); every column is now
    opened, so every one of 8 fits (nothing patched, no retries) is refused, naming column 2.
    """
    spectrum = [10.0, 5.0, 4.9, 1.0, 1.0, 1.0]
    check_assumed_gap(np.array(spectrum[:2]), sum(spectrum), 6, 0.5, eta=0.0)  # passes: mass in lambda_3
    parts, _ = _parts(spectrum)
    for fit in range(8):
        message, residual, allowed = _refusal(parts, 2, 0.5)
        assert "(or without it: the default is 0.1)" in message
        assert "in column j=2" in message, (fit, message)
        assert residual > 2.0 * allowed, (fit, residual, allowed)  # 2.14x measured, every fit


def test_k1_the_verdict_does_not_depend_on_the_random_draw():
    """k = 1 (r is a scalar, so the ratio is the draw's): 10, 9.8, 1, ... with eigengap=0.5."""
    parts, _ = _parts([10.0, 9.8, 1.0, 1.0, 1.0, 1.0])
    _, residual, allowed = _refusal(parts, 1, 0.5)
    assert residual > 2.0 * allowed


def test_the_same_data_with_a_true_small_gap_fit_accurately():
    parts, x = _parts([10.0, 5.0, 4.9, 1.0, 1.0, 1.0])
    model = PPPCA(2, reveal="components", eigengap=0.01).fit(parts)
    assert np.max(subspace_angles(model.components_.T, PCA(2).fit(x).components_.T)) < 1e-4


def _random_t(monkeypatch, wine, k: int, *, wrong_n: bool = False) -> None:
    d = wine.shape[1]

    def answer(to, a):
        a[k] += 1.0 if wrong_n else 0.0
        return a

    cheating_server(monkeypatch, d, k, transfer=lambda to, t: random_orthonormal(d, k, 4), answer=answer)


def test_covariance_mode_keeps_accusing_the_server_of_a_wrong_residual(monkeypatch, wine):
    """A server computing in the clear has no eigengap to blame: the error stays the server's."""
    _random_t(monkeypatch, wine, 2)
    with pytest.raises(
        ProtocolError, match=r"^'server' sent a wrong answer.*C T - T Lambda is not zero"
    ) as caught:
        run(np.array_split(wine, 3), 2)
    assert "eigengap" not in str(caught.value)


def test_components_mode_accuses_the_server_when_more_than_the_residual_is_wrong(monkeypatch, wine):
    """A wrong N does not follow from a false eigengap: the server's error, naming both failures."""
    standardized = (wine - wine.mean(0)) / wine.std(0)
    _random_t(monkeypatch, wine, 2, wrong_n=True)
    with pytest.raises(
        ProtocolError, match=r"^'server' sent a wrong answer.*C T - T Lambda .* not N="
    ) as caught:
        run(np.array_split(standardized, 3), 2, reveal="components")
    assert "eigengap" not in str(caught.value)
