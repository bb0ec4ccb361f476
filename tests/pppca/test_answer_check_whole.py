"""The answer check covers the whole answer (issue 35): the mean, the top-k property, its tolerances.

Same cheating server as ``test_answer_check`` (the real server role behind a
party whose ``send`` rewrites messages to the providers). Each attack here
passed the check before the mean entered the digest and the secure sum and
before check 5 (:mod:`mpc_pca.pppca.top_k_check`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

import mpc_pca.pppca.deployment as pppca_deployment
from mpc_pca.pppca import answer_check, top_k_check
from protocols.backends import make_backend
from tests.helpers import pppca_threads as driver
from tests.pppca.test_answer_check import assert_caught, cheating_server, run


@pytest.fixture
def parts(wine):
    return np.array_split(wine, 3)


def standardized_spectrum(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues (decreasing), eigenvectors and column scales of the matrix a standardizing server decomposes."""
    scale = data.std(axis=0)
    matrix = np.cov(data, rowvar=False) / np.outer(scale, scale)
    values, vectors = np.linalg.eigh(matrix)
    return values[::-1], vectors[:, ::-1], scale


def other_eigenpairs(monkeypatch, data, picks, *, standardize=True) -> None:
    """The server sends true eigenpairs ``picks`` (0-based) of its matrix as the top ``len(picks)``."""
    d, k = data.shape[1], len(picks)
    if standardize:
        values, vectors, scale = standardized_spectrum(data)
    else:
        values, vectors = np.linalg.eigh(np.cov(data, rowvar=False))
        values, vectors, scale = values[::-1], vectors[:, ::-1], np.ones(d)
    chosen = list(picks)
    cheating_server(
        monkeypatch, d, k,
        transfer=lambda to, t: vectors[:, chosen] / scale[:, None],
        answer=lambda to, a: np.concatenate([values[chosen], a[k:]]),
    )  # fmt: skip


def shifted_mean(monkeypatch, d: int, factor: float, only: str | None = None) -> None:
    """The server sends the mean of step 2 times ``factor`` (to ``only``, or to every provider)."""

    def shift(to, obj):
        is_mean = isinstance(obj, np.ndarray) and obj.dtype == np.float64 and obj.shape == (d,)
        return obj * factor if is_mean and (only is None or to == only) else obj

    monkeypatch.setattr(pppca_deployment, "server_role", _tampered(shift))


def _tampered(tamper):
    from mpc_pca.pppca.server import server_role
    from tests.pppca.test_answer_check import TamperingParty

    return lambda party, config, backend: server_role(TamperingParty(party, tamper), config, backend)


@pytest.mark.parametrize("options", [{}, {"standardize": True}])
def test_a_shifted_mean_is_caught(monkeypatch, parts, options):
    """Before: every party exited 0 with projections 45 % off (the residual used the same wrong mean)."""
    shifted_mean(monkeypatch, parts[0].shape[1], 1.05)
    assert_caught(parts, 2, "the mean it sent is off", **options)


def test_a_mean_sent_to_one_provider_only_is_caught(monkeypatch, parts):
    shifted_mean(monkeypatch, parts[0].shape[1], 1.05, only="provider1")
    assert_caught(parts, 2, "different answers")


def test_a_shifted_mean_is_caught_with_reveal_components(monkeypatch, wine):
    standardized = (wine - wine.mean(0)) / wine.std(0) + 3.0
    shifted_mean(monkeypatch, wine.shape[1], 1.05)
    assert_caught(np.array_split(standardized, 3), 2, "the mean it sent is off", reveal="components")


@pytest.mark.parametrize("picks", [(1, 2), (0, 2)], ids=["eigenpairs-2-3", "eigenpairs-1-3"])
def test_other_true_eigenpairs_of_standardized_wine_are_caught(monkeypatch, wine, picks):
    """Wine's standardized spectrum 4.73, 2.51, 1.45: λ_2 - λ_3 = 0.42 λ_2 > λ_2 / 4, so check 5 must refuse."""
    values, _, _ = standardized_spectrum(wine)
    assert values[1] - values[2] > top_k_check.RELATIVE_GAP * values[1]
    other_eigenpairs(monkeypatch, wine, picks)
    assert_caught(np.array_split(wine, 3), 2, "not the top 2", standardize=True)


@pytest.mark.parametrize("mode", ["additive-masks", "additive-sparse-masks"])
def test_other_eigenpairs_are_caught_on_the_runs_pairwise_masks(monkeypatch, wine, mode):
    other_eigenpairs(monkeypatch, wine, (1, 2))
    with pytest.raises(answer_check.ProtocolError, match="not the top 2"):
        driver.run_pppca(np.array_split(wine, 5), 2, make_backend(mode), standardize=True, timeout=30)


class _Recording:
    """A provider's party during the answer check: every message it sends is also appended to ``log``."""

    def __init__(self, party: Any, log: list[tuple[str, Any]]) -> None:
        self._party, self._log = party, log

    def send(self, to: str, obj: Any) -> None:
        self._log.append((to, obj))
        self._party.send(to, obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._party, name)


def _float_shapes(log: list[tuple[str, Any]], peer: str) -> list[tuple[int, ...]]:
    """Shapes of the float arrays in ``log`` sent to ``peer`` (``r`` and ``x``, the forwarded openings)."""
    return [
        obj.shape for to, obj in log if to == peer and isinstance(obj, np.ndarray) and obj.dtype == np.float64
    ]


@pytest.mark.parametrize("reveal", ["covariance", "components", "spectrum"])
def test_the_hidden_modes_open_no_product_of_the_covariance(monkeypatch, wine, reveal):
    """Check 5 opens ``R Y`` to every provider: only with ``reveal="covariance"`` (the server sees ``R``).

    With ``"components"`` or ``"spectrum"`` each provider takes part in one opening, of checks 4 (every
    column of the residual) and the mean (``(k + 1) d + 2`` numbers, no direction attached), and
    provider0 sends each other provider only the digest and that opening: no start ``x``, no
    power-step product. The covariance run is the control: the same spies see check 5's ``p``
    openings there.
    """
    from mpc_pca.pppca import protocol
    from mpc_pca.pppca.check_opening import CheckOpening

    d, k = wine.shape[1], 2
    standardized = (wine - wine.mean(0)) / wine.std(0)
    sent: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    openings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    real_check, real_open = protocol.check_server_answer, CheckOpening.open

    def recording_check(party, *args):
        return real_check(_Recording(party, sent[party.name]), *args)

    def recording_open(self, summand, attach=None, extra=0):
        openings[self.party.name].append((summand.shape[0], extra))
        return real_open(self, summand, attach, extra)

    monkeypatch.setattr(protocol, "check_server_answer", recording_check)
    monkeypatch.setattr(CheckOpening, "open", recording_open)
    model, _, _ = run(np.array_split(standardized, 3), k, reveal=reveal)
    assert model.components.shape == (k, d)
    providers = ("provider0", "provider1", "provider2")
    assert sorted(openings) == sorted(sent) == sorted(providers)
    if reveal == "covariance":  # control: x, then p openings (the first with R x)
        p = top_k_check.power_steps(d, k)
        assert p == 11
        assert openings["provider0"] == [((k + 2) * d + 2, d)] + [(d, d)] * (p - 2) + [(d, 0)]
        floats = _float_shapes(sent["provider0"], "provider1")
        assert floats == [(d,), ((k + 2) * d + 2 + d,), *[(2 * d,)] * (p - 2), (d,)], floats
        return
    for name in providers:
        assert openings[name] == [((k + 1) * d + 2, 0)], name
    for peer in providers[1:]:
        floats = _float_shapes(sent["provider0"], peer)
        assert floats == [((k + 1) * d + 2,)], (peer, floats)
    for name in providers:  # nothing larger than the one opening leaves any provider during the check
        sizes = [np.size(obj) for _, obj in sent[name] if isinstance(obj, np.ndarray)]
        assert max(sizes) <= (k + 1) * d + 2, (name, sizes)


def test_a_missed_eigenvalue_in_a_crowded_spectrum_is_caught_at_d_100(monkeypatch):
    """d = 100, k = 3: the sent λ_3 is the 4th eigenvalue, 30 % below the missed λ_3, and 96 others crowd below down to 1.

    A crowded tail slows power steps; with :func:`top_k_check.power_steps` (25) Arnoldi steps the
    missed eigenvalue is still found.
    """
    rng = np.random.default_rng(5)
    d, k = 100, 3
    spectrum = np.concatenate([[10.0, 8.0, 6.0, 4.4], np.linspace(4.39, 1.0, d - 4)])
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    white = rng.standard_normal((3000, d))
    white -= white.mean(axis=0)
    white = white @ np.linalg.inv(np.linalg.cholesky(np.cov(white, rowvar=False))).T  # sample covariance I
    data = white @ (basis * np.sqrt(spectrum)).T + 5.0
    values, vectors = np.linalg.eigh(np.cov(data, rowvar=False))
    values, vectors = values[::-1], vectors[:, ::-1]
    assert values[2] - values[3] > top_k_check.RELATIVE_GAP * values[2]
    other_eigenpairs(monkeypatch, data, (0, 1, 3), standardize=False)
    assert_caught(np.array_split(data, 3), k, "not the top 3")


def test_the_number_of_power_steps_follows_the_bound():
    """``p = min(n, 1 + ceil(ln(8 (1-g) / (g t^2)) / (2 ln ζ)))``, ``n = d - k``, ``t = 2^-20 sqrt(pi / (2 (n - 1)))``."""
    assert top_k_check.power_steps(13, 2) == 11  # wine: the whole complement (exact)
    assert top_k_check.power_steps(100, 2) == 25
    assert top_k_check.power_steps(13, 13) == 0 and top_k_check.power_steps(13, 12) == 1
    t = 2.0**-20 * math.sqrt(math.pi / (2 * 97))
    zeta = (1 + math.sqrt(1 / 8)) / (1 - math.sqrt(1 / 8))
    assert top_k_check.power_steps(100, 2) == 1 + math.ceil(math.log(24 / t**2) / (2 * math.log(zeta)))


def test_the_ritz_bounds_of_the_proof_hold_on_a_hard_spectrum():
    """The proof's steps on a crowded spectrum, for every start: ``θ >= a q / (1 + q)`` (Chebyshev,
    ``a = (1 - g/2) μ``, ``q = c_1^2 T_m(z)^2``) and ``θ >= μ |c_1|^(2/(2p-1))`` (log-convexity).
    """
    n, p, h = 60, 8, top_k_check.RELATIVE_GAP / 2
    mu = np.concatenate([[1.0], np.linspace(1 - h, 0.8, n - 1)])
    z = (1 + h) / (1 - h)
    chebyshev = np.cosh((p - 1) * np.arccosh(z))  # T_m(z), z > 1
    q = np.zeros((n, 0))
    for _ in range(50):
        x = top_k_check.start_vector(q)
        ys, zs = [x], [mu * x]
        for _ in range(1, p):
            ys.append(top_k_check.next_direction(zs[-1], q, np.stack(ys, axis=1)))
            zs.append(mu * ys[-1])
        theta = top_k_check.ritz_value(np.stack(ys, axis=1), np.stack(zs, axis=1))
        weight = x[0] ** 2 * chebyshev**2
        assert theta <= 1.0 + 1e-12
        assert theta >= (1 - h) * weight / (1 + weight) - 1e-12, (theta, x[0])
        assert theta >= abs(x[0]) ** (2 / (2 * p - 1)) - 1e-12, (theta, x[0])


@pytest.mark.parametrize(("ratio", "caught"), [(2.0, True), (0.5, False)])
def test_the_residual_tolerance_is_tight(monkeypatch, parts, ratio, caught):
    """An eigenvalue off by ``ratio`` times the allowed relative residual ``4 x 1e-9``: caught at 2x, passes at 0.5x.

    With ``k = 1`` the residual ``|(R v - v λ̂) r| / λ̂`` is ``|λ - λ̂| |r| / λ̂`` whatever ``r``; on
    wine the run's rounding is far below LAPACK's floor ``1e-9``, so the allowed
    ``4 ε |r|`` is ``4e-9 |r|`` (a tolerance loosened 1000x or tightened 10x fails here).
    """
    d = parts[0].shape[1]
    relative = 4e-9 * ratio

    def off(to, a):
        a[0] *= 1.0 / (1.0 - relative)  # |λ - λ̂| / λ̂ = relative
        return a

    cheating_server(monkeypatch, d, 1, answer=off)
    if caught:
        assert_caught(parts, 1, "C T - T Lambda is not zero")
    else:
        model, _, _ = run(parts, 1)
        assert model.components.shape == (1, d)


def _allowed_mean_error(monkeypatch, parts) -> tuple[np.ndarray, np.ndarray]:
    """The mean tolerance of an honest run on ``parts``, from the stated bound, and ``a / √λ_1``.

    Entry ``j`` may be ``2 a_j (M 2^-(f+1+A) / N + 2^-44 (1 + |m_j|)) / √λ_1 + 2^-40``
    (``A`` the sums' scale exponent); the run's own :func:`answer_check.mean_bound` must agree.
    """
    from mpc_pca.pppca.scaling import sums_scale_exponent

    seen = {}
    real = answer_check.verify_opening

    def spy(opened, config, backend, answer, k, reporter, mean, noise):
        f = backend.codec.frac_bits
        fixed = (
            config.n_parties * 2.0 ** -(f + 1 + sums_scale_exponent(config.n_parties, f)) / answer.n_samples
        )
        units = np.ldexp(1.0 / answer.scale, np.asarray(config.exponents)) / math.sqrt(answer.eigenvalues[0])
        seen["bound"] = units * (fixed + 2.0**-44 * (1.0 + np.abs(mean)))
        seen["units"] = units
        np.testing.assert_allclose(answer_check.mean_bound(config, backend, answer, mean), seen["bound"])
        real(opened, config, backend, answer, k, reporter, mean, noise)

    with monkeypatch.context() as patch:
        patch.setattr(answer_check, "verify_opening", spy)
        run(parts, 2)
    return 2.0 * seen["bound"] + 2.0**-40, seen["units"]


@pytest.mark.parametrize(("ratio", "caught"), [(2.0, True), (0.5, False)])
def test_the_mean_tolerance_is_tight(monkeypatch, parts, ratio, caught):
    """Column 0's mean off by ``ratio`` times its allowed error: caught at 2x, passes at 0.5x."""
    allowed, units = _allowed_mean_error(monkeypatch, parts)
    d = parts[0].shape[1]
    shift = np.zeros(d)
    shift[0] = ratio * allowed[0] / units[0]  # in the agreed column units of the mean message

    def off(to, obj):
        is_mean = isinstance(obj, np.ndarray) and obj.dtype == np.float64 and obj.shape == (d,)
        return obj + shift if is_mean else obj

    monkeypatch.setattr(pppca_deployment, "server_role", _tampered(off))
    if caught:
        assert_caught(parts, 2, "the mean it sent is off")
    else:
        model, _, _ = run(parts, 2)
        assert model.components.shape == (2, d)


@pytest.mark.parametrize(("ratio", "caught"), [(2.0, True), (0.5, False)])
def test_the_top_k_tolerance_is_tight(monkeypatch, ratio, caught):
    """λ_1 - λ_2 = ``ratio`` times check 5's allowance ``4 x 1e-9 λ_1``, the server sends pair 2 as the top 1.

    The data's sample covariance is exactly ``diag(1 + gap, 1, 0.5, ...)`` (whitened rows), so with
    ``d - 1`` power steps (exact) the missed ``λ_1`` is found: caught at 2x, passes at 0.5x (within
    the stated tolerance, as the honest bound needs).
    """
    rng = np.random.default_rng(3)
    d = 6
    gap = ratio * 4e-9
    spectrum = np.array([1.0 + gap, 1.0, 0.5, 0.4, 0.3, 0.2])
    white = rng.standard_normal((400, d))
    white -= white.mean(axis=0)
    white = white @ np.linalg.inv(np.linalg.cholesky(np.cov(white, rowvar=False))).T
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    data = white @ (basis * np.sqrt(spectrum)).T
    other_eigenpairs(monkeypatch, data, (1,), standardize=False)
    if caught:
        assert_caught(np.array_split(data, 3), 1, "not the top 1")
    else:
        model, _, _ = run(np.array_split(data, 3), 1)
        assert model.components.shape == (1, d)


@pytest.mark.parametrize("change", [1, -1], ids=["one-too-many", "one-too-few"])
def test_a_k_other_than_the_variance_fractions_is_caught(monkeypatch, wine, change):
    """``n_components=0.9`` on standardized wine: the server keeps one pair more (or fewer) than the rule."""
    from mpc_pca.linalg import leading_eigenpairs, selected_eigenpairs
    from mpc_pca.pppca import server

    def wrong_k(matrix, rule, n_samples, *, overwrite=False):
        values, _, _, _ = selected_eigenpairs(matrix.copy(), rule, n_samples)
        return leading_eigenpairs(matrix, values.shape[0] + change, overwrite=overwrite)

    parts = np.array_split(wine, 3)
    model, _, _ = run(parts, 0.9, standardize=True)
    assert model.components.shape[0] >= 2  # room for one fewer
    monkeypatch.setattr(server, "selected_eigenpairs", wrong_k)
    assert_caught(parts, 0.9, "variance fraction", standardize=True)
