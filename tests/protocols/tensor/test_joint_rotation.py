"""Rotations drawn by one holder or by every holder (protocols.tensor.joint_rotation; issue 39)."""

from __future__ import annotations

import hashlib
import math
import threading

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import subspace_angles

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError
from protocols.prg import RingPRG
from protocols.runtime import run_inprocess
from protocols.sharing import split
from protocols.tensor import TensorSession, from_share
from protocols.tensor import joint_rotation as jr
from protocols.tensor import spectrum_eig as se
from protocols.tensor.batched import reveal_many
from protocols.tensor.fast_eig import ladder_eigenvectors
from protocols.tensor.fast_eig_math import F
from protocols.tensor.joint_rotation import orthogonality_bound, rotation_error_bound, shared_rotation
from protocols.tensor.krylov_eig import krylov_eigenvectors
from protocols.tensor.spectrum_eig import spectrum_eigenvectors

GRAM_BITS = 20


def _holders(m: int) -> list[str]:
    return [f"h{i}" for i in range(m)]


def _planted(d: int, seed: int) -> np.ndarray:
    """A symmetric PSD matrix with top eigenvalues 10, 8, 6 over a bulk in [0.5, 2] (clear gaps)."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    spectrum = np.r_[[10.0, 8.0, 6.0], np.linspace(2.0, 0.5, d - 3)]
    matrix = basis @ np.diag(spectrum) @ basis.T
    return (matrix + matrix.T) / 2.0


def _solve(matrix: np.ndarray, solve, m: int, rotations: str, prepare=None):
    """Share ``matrix`` (``GRAM_BITS`` bits) among ``m`` holders and run ``solve`` in-process."""
    d = matrix.shape[0]
    holders = _holders(m)
    shares = split(FixedPointCodec(GRAM_BITS).encode(matrix, name="matrix"), m)

    def role(name):
        def run(party):
            session = TensorSession(party, holders=holders, dealer="dealer", frac_bits=F, rotations=rotations)
            if prepare is not None:
                prepare(session)
            share = shares[holders.index(name)] if name in holders else None
            return solve(from_share(session, share, (d, d), GRAM_BITS))

        return run

    return run_inprocess({name: role(name) for name in [*holders, "dealer"]}, timeout=120)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_every_holder_rotation_is_orthogonal_within_its_bound(m):
    size = 12
    holders = _holders(m)

    def role(name):
        def run(party):
            session = TensorSession(
                party, holders=holders, dealer="dealer", frac_bits=F, rotations="every-holder"
            )
            q = shared_rotation(session, size, drawn_by="every-holder")
            out = reveal_many([q], "dealer")
            return None if out is None else out[0]

        return run

    run = run_inprocess({name: role(name) for name in [*holders, "dealer"]}, timeout=60)
    q = run.outputs["dealer"]
    deviation = float(np.linalg.norm(q.T @ q - np.eye(size), 2))
    assert 0.0 < deviation <= orthogonality_bound(size, m, F)
    # seeds, one round for every holder's sharing, an opening and a truncation per level, the reveal
    levels = math.ceil(math.log2(m))
    assert max(run.reports[h].rounds for h in holders) == 3 + 2 * levels


def test_the_bound_is_the_one_factor_rounding_for_holder0_and_grows_with_m():
    n = 40
    assert rotation_error_bound(n, 1, F) == pytest.approx(n * 2.0 ** -(F + 1))
    e = rotation_error_bound(n, 1, F)
    assert orthogonality_bound(n, 1, F) == pytest.approx(2 * e + e * e)
    bounds = [rotation_error_bound(n, m, F) for m in (1, 2, 3, 5)]
    assert bounds == sorted(bounds)
    # first order: (3 M - 2) n 2^-(F+1)
    assert bounds[-1] == pytest.approx(13 * n * 2.0 ** -(F + 1), rel=1e-4)
    with pytest.raises(InputValidationError):
        rotation_error_bound(n, 0, F)


def test_unknown_settings_are_refused():
    with pytest.raises(InputValidationError, match="rotations="):
        _solve(np.eye(4), lambda c: None, 2, "holder1")

    def bad(c):
        return shared_rotation(c.session, 3, drawn_by="everyone")  # type: ignore[arg-type]

    with pytest.raises(InputValidationError, match="drawn_by="):
        _solve(np.eye(4), bad, 2, "holder0")


@pytest.mark.parametrize("m", [2, 3])
def test_spectrum_ladder_and_krylov_with_every_holder_rotations_match_eigh(m):
    d, k = 16, 3
    matrix = _planted(d, seed=m)
    values, vectors = np.linalg.eigh(matrix)
    values, vectors = values[::-1], vectors[:, ::-1][:, :k].T
    # the input's own rounding (GRAM_BITS, half an ulp per entry), in spectral norm
    input_error = d * 2.0 ** -(GRAM_BITS + 1)

    spectrum = _solve(matrix, lambda c: spectrum_eigenvectors(c, k, to="dealer"), m, "every-holder")
    result = spectrum.outputs["dealer"]
    eta = result.fixed_point_error / result.scale + input_error
    assert result.fixed_point_error > se._spectrum_fixed_point_error(d, 1)  # the product's error is counted
    assert np.max(np.abs(result.spectrum - values)) <= eta
    gaps = np.array([min(abs(values[i] - values[j]) for j in range(d) if j != i) for i in range(k)])
    signs = np.sign(np.sum(result.components * vectors, axis=1))[:, None]
    errors = np.linalg.norm(result.components * signs - vectors, axis=1)
    assert np.all(errors <= math.sqrt(2.0) * 2.0 * eta / gaps)

    top_gap = values[k - 1] - values[k]
    for solver in (ladder_eigenvectors, krylov_eigenvectors):
        run = _solve(matrix, lambda c, solver=solver: solver(c, k, to="dealer"), m, "every-holder")
        result = run.outputs["dealer"]
        t = result.plan.achieved_tol
        assert np.max(np.abs(result.eigenvalues - values[:k])) <= (
            result.fixed_point_error / result.scale + input_error + values[0] * t * t
        )
        # t bounds the angle to the top-k space of the matrix the protocol computed on, which is off from
        # ``matrix`` by at most eta (fixed point): Davis-Kahan adds eta over the k-th gap (sin <= tan, small angles)
        eta = result.fixed_point_error / result.scale + input_error
        assert np.tan(np.max(subspace_angles(result.components.T, vectors.T))) <= t + 2.0 * eta / top_gap


def _view_of_holder0_and_receiver(monkeypatch, rotations: str, m: int, d: int):
    """Holder 0's own drawn rotation and the receiver's revealed ``S = Q Ĉ Q^T`` of a spectrum solve."""
    drawn: dict[str, list[np.ndarray]] = {}
    revealed: list[np.ndarray] = []
    draw, reveal = jr.haar_rotation, se.reveal_many

    def recording_draw(size, prg=None):
        # a fixed key per party (the test's seed) instead of the CSPRNG's fresh one
        name = threading.current_thread().name
        q = draw(size, RingPRG(hashlib.sha256(f"i39 {name}".encode()).digest()))
        drawn.setdefault(name, []).append(q)
        return q

    def recording_reveal(xs, to):
        out = reveal(xs, to)
        if out is not None and not revealed:
            revealed.append(out[0])
        return out

    monkeypatch.setattr(jr, "haar_rotation", recording_draw)
    monkeypatch.setattr(se, "reveal_many", recording_reveal)
    matrix = _planted(d, seed=7)
    run = _solve(matrix, lambda c: spectrum_eigenvectors(c, 3, to="dealer"), m, rotations)
    (own,) = drawn["party-h0"]
    return matrix, own, revealed[0], run.outputs["dealer"]


@pytest.mark.parametrize(("rotations", "recovers"), [("holder0", True), ("every-holder", False)])
def test_holder0_with_the_receiver_recovers_c_only_when_it_drew_the_whole_rotation(
    monkeypatch, rotations, recovers
):
    """Holder 0's factor ``Q_0`` undoes ``S = Q Ĉ Q^T`` iff ``Q = Q_0``; every-holder ``Q`` leaves it Haar-scrambled.

    With every holder's factor, ``Q_0^T S Q_0 / alpha = R C R^T`` for ``R = Q_0^T Q_2 Q_1 Q_0``, Haar
    and unknown to holder 0: ``|R C R^T - C| / |C|`` was at least 0.52 in 200,000 Haar draws of ``R``
    (scipy's ortho_group) for this matrix. The parties' draws are seeded here, so the test is deterministic.
    """
    d = 12
    matrix, own, s, result = _view_of_holder0_and_receiver(monkeypatch, rotations, 3, d)
    guess = own.T @ ((s + s.T) / 2.0) @ own / result.scale
    relative = float(np.linalg.norm(guess - matrix, 2) / np.linalg.norm(matrix, 2))
    if recovers:
        assert relative < 1e-5
    else:
        assert relative > 0.3  # a Haar-scrambled copy of C


def test_prepared_rotations_keep_the_online_rounds_and_are_used_once():
    """Made before the data (prepare_rotations), an every-holder rotation leaves the solve's rounds as holder 0's.

    Online rounds: those of a run that prepares and solves minus those of a run that only prepares.
    """
    d, k, m = 12, 3, 3
    matrix = _planted(d, seed=1)
    holders = _holders(m)

    def solve(c):
        return spectrum_eigenvectors(c, k, to="dealer")

    def prepare(session):
        jr.prepare_rotations(session, [d])

    def prepare_only(c):
        if len(c.session.prepared_rotations[d]) != 1:
            raise AssertionError("one rotation should be prepared")

    online = {}
    for rotations in ("holder0", "every-holder"):
        offline = _solve(matrix, prepare_only, m, rotations, prepare=prepare)
        both = _solve(matrix, solve, m, rotations, prepare=prepare)
        online[rotations] = max(both.reports[h].rounds - offline.reports[h].rounds for h in holders)
    assert online["every-holder"] == online["holder0"]
    values = np.sort(np.linalg.eigvalsh(matrix))[::-1]
    result = both.outputs["dealer"]
    assert np.max(np.abs(result.spectrum - values)) <= result.fixed_point_error / result.scale + 1e-4


def test_a_prepared_rotation_is_taken_once():
    holders = _holders(2)

    def role(name):
        def run(party):
            session = TensorSession(
                party, holders=holders, dealer="dealer", frac_bits=F, rotations="every-holder"
            )
            jr.prepare_rotations(session, [4])
            first = jr.take_rotation(session, 4)
            left = len(session.prepared_rotations[4])
            second = jr.take_rotation(session, 4)  # none left: made now
            return left, first is second

        return run

    run = run_inprocess({name: role(name) for name in [*holders, "dealer"]}, timeout=60)
    assert run.outputs["h0"] == (0, False)


def test_the_every_holder_product_is_haar(monkeypatch):
    """On O(3) a Haar matrix's entries are uniform on [-1, 1] (Archimedes): KS tests at alpha = 1e-3.

    400 products of three holders' rotations, each party's draws from a fixed key (the test's seed).
    A product that is not Haar, such as ``Q_0 Q_0``, fails: its (0, 0) entry leans towards +1.
    """
    holders = _holders(3)
    draw = jr.haar_rotation
    counters: dict[str, int] = {}

    def seeded_draw(size, prg=None):
        name = threading.current_thread().name
        counters[name] = counters.get(name, 0) + 1
        return draw(size, RingPRG(hashlib.sha256(f"haar {name} {counters[name]}".encode()).digest()))

    monkeypatch.setattr(jr, "haar_rotation", seeded_draw)

    def role(name):
        def run(party):
            session = TensorSession(party, holders=holders, dealer="dealer", frac_bits=F)
            qs = jr.shared_rotations(session, [3] * 400, drawn_by="every-holder")
            return reveal_many(qs, "dealer")

        return run

    qs = np.array(
        run_inprocess({name: role(name) for name in [*holders, "dealer"]}, timeout=60).outputs["dealer"]
    )
    for entry in (qs[:, 0, 0], qs[:, 1, 2]):
        assert stats.kstest(entry, stats.uniform(loc=-1.0, scale=2.0).cdf).pvalue > 1e-3
