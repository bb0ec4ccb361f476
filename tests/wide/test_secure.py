"""pppca-randomized through the threads runner: equal to the plaintext reference, O(d b) messages, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.registry import entry
from mpc_pca.threads import run_protocol
from mpc_pca.wide.encoding import MAX_EXPONENT, product_magnitude, product_shift
from mpc_pca.wide.site import site_scores
from protocols.backends import make_backend
from protocols.errors import InputValidationError
from protocols.testing.recording import Recorder
from tests.wide.helpers import (
    BlocksPart,
    dense_covariance,
    gapped_rows,
    reference,
    split,
    subspace_sine,
    top_eigh,
)

K = 5
SOLVER = {"n_components": K, "iterated_power": 60, "tol": 1e-12, "start_seed": 21}


def run(parts, **settings):
    return run_protocol(entry("pppca-randomized"), parts, {**SOLVER, **settings})


@pytest.mark.parametrize(
    ("sizes", "standardize", "backend"),
    [
        ([40, 3, 557], False, "additive"),  # a site with fewer rows than k
        ([211, 1, 99, 380, 9], True, "additive"),  # a site with one row
        ([300, 150, 250], True, "additive-masks"),
    ],
)
def test_the_secure_run_equals_the_plaintext_reference_from_the_same_start(sizes, standardize, backend):
    rows = gapped_rows(sum(sizes), 150, seed=len(sizes))
    parts = split(rows, sizes)
    done = run(parts, standardize=standardize, backend=backend)
    model = done.output
    ref = reference(parts, K, standardize=standardize, iterated_power=60, tol=1e-12, seed=21)
    assert model.solver.n_products == ref.n_products and model.solver.stop == ref.stop == "tol"
    assert np.max(np.abs(model.components - ref.components)) <= 1e-8
    assert np.max(np.abs(model.explained_variance - ref.eigenvalues) / ref.eigenvalues) <= 1e-8
    # the fixed-point error of each product it states is far below that
    assert model.product_error_bound <= 1e-10 * ref.eigenvalues[0]
    assert model.sums_error_bound <= 1e-6 * np.max(np.abs(rows))
    assert np.max(np.abs(model.mean - rows.mean(axis=0))) <= model.sums_error_bound / rows.shape[0] + 1e-12
    # and both are the exact decomposition of the pooled (standardized) covariance
    _, vectors = top_eigh(dense_covariance(rows, standardize), K)
    assert subspace_sine(model.components, vectors) <= 1e-8
    # each site's scores are its own rows projected on the agreed components, computed where they live
    scale = model.scale if standardize else np.ones(rows.shape[1])
    for name, part in zip(done.protocol.data_holders(len(parts)), parts, strict=True):
        scores = done.run.outputs[name]["scores"]
        assert scores.shape == (part.shape[0], K)
        assert np.allclose(scores, site_scores(part, model.mean, scale, model.components), atol=1e-12)
        assert np.allclose(scores, ((part - rows.mean(0)) / (rows.std(0) if standardize else 1)) @ vectors.T * np.sign(
            np.sum(model.components * vectors, axis=1)), atol=1e-6)  # fmt: skip


def test_a_site_reading_its_rows_in_chunks_gives_the_same_run():
    rows = gapped_rows(700, 60, seed=9)
    parts = split(rows, [333, 367])
    whole = run(parts).output
    chunked = run([BlocksPart(parts[0], 41), BlocksPart(parts[1], 100)]).output
    assert np.max(np.abs(whole.components - chunked.components)) <= 1e-12


def test_every_message_is_o_of_d_b_and_none_is_d_by_d():
    d, k, n_oversamples = 2000, 2, 10
    rows = np.random.default_rng(0).normal(size=(120, d))
    rows[:, :3] *= 6.0
    recorder = Recorder()
    done = run_protocol(
        entry("pppca-randomized"),
        split(rows, [30, 50, 40]),
        {"n_components": k, "n_oversamples": n_oversamples, "iterated_power": 3},
        wrap_channel=recorder.wrap,
    )
    b = k + n_oversamples
    arrays = [d_.message for d_ in recorder.deliveries if isinstance(d_.message, np.ndarray)]
    assert arrays and max(a.size for a in arrays) == d * b  # the blocks and their shares
    assert all(a.size <= max(d * b, k + k * d, 2 * d + 1) for a in arrays)
    assert not any(a.ndim == 2 and a.shape == (d, d) for a in arrays)
    sizes = [len(m) for m in (d_.message for d_ in recorder.deliveries) if isinstance(m, (bytes, bytearray))]
    assert max(sizes, default=0) <= 16 * d * b
    cap = done.config.cap
    assert cap < 8 * d * d  # the message cap itself forbids a d x d array of float64
    assert done.output.solver.n_products == 4


def bad_run(parts, **settings):
    recorder = Recorder()
    with pytest.raises(InputValidationError) as caught:
        run_protocol(entry("pppca-randomized"), parts, {**SOLVER, **settings}, wrap_channel=recorder.wrap)
    assert recorder.deliveries == []  # refused before anything is sent
    return str(caught.value)


def test_bad_input_is_refused_before_anything_is_sent():
    rows = gapped_rows(60, 8, seed=10)
    parts = split(rows, [20, 40])
    assert "exceeds provider0's 8 columns" in bad_run(parts, n_components=9)
    assert "n_components must be an integer of at least 1" in bad_run(parts, n_components=0)
    assert "exceeds min(n_features=8, n_samples=7)" in bad_run(split(rows[:7], [3, 4]), n_components=8)
    assert "provider1 holds no rows" in bad_run([rows, np.empty((0, 8))])
    nan = rows.copy()
    nan[45, 3] = np.nan
    assert "index (25, 3)" in bad_run(split(nan, [20, 40]))
    message = bad_run([rows, gapped_rows(10, 9)])
    assert "numbers of features differ" in message and "'provider1': 9" in message
    huge = rows.copy()
    huge[5, 1] = 1e200
    message = bad_run(split(huge, [20, 40]))
    assert "provider0 holds a value of magnitude 1e+200" in message and f"2^{MAX_EXPONENT}" in message
    assert "iterates='shares' is not a mode of pppca-randomized" in bad_run(parts, iterates="shares")
    assert "tol must be None" in bad_run(parts, tol=2.0)
    assert "runs on the backends" in bad_run(parts, backend="paillier")
    assert "takes no setting ['reveal']" in bad_run(parts, reveal="components")


def test_the_product_scaling_keeps_the_worst_case_in_the_ring():
    """Rows at the agreed bound with the block along them: the scaled product still encodes for M summands."""
    f, m, n, d = 20, 3, 64, 16
    codec = make_backend("additive", frac_bits=f).codec
    for standardize in (False, True):
        shift = product_shift(m, f, n, d, standardize)
        worst = product_magnitude(n, d, standardize) * (1 - 1e-12)
        codec.check_range(np.array([np.ldexp(worst, shift)]), m)
        with pytest.raises(InputValidationError, match="must stay below"):
            codec.check_range(np.array([np.ldexp(4 * worst, shift)]), m)


def test_announcements_are_checked_against_the_schema_and_must_agree():
    from mpc_pca.floor import floor_public

    protocol = entry("pppca-randomized")
    parts = split(gapped_rows(40, 6, seed=12), [15, 25])
    settings = protocol.settings({"n_components": 2})
    holders = protocol.data_holders(2)
    data = dict(zip(holders, parts, strict=True))

    def views():
        return {
            name: {
                **floor_public(protocol.name, 2, name in data),
                **protocol.public(name, data.get(name), settings),
            }
            for name in protocol.layout(2)
        }

    good = protocol.configure(views(), 2)
    assert (good.config.n_samples, good.config.width, good.config.n_features) == (40, 6, 6)
    for sender, key, value, match in [
        ("provider1", "n_rows", -3, "provider1 announced n_rows=-3, which must be >= 1"),
        ("server", "tol", 5.0, "server announced tol=5.0, which must be <= 1.0"),
        ("provider0", "exponent", "big", "provider0 announced exponent='big', which must be an integer"),
        ("provider0", "start_seed", 1, "the parties disagree on start_seed"),
    ]:
        bad = views()
        bad[sender][key] = value
        with pytest.raises(InputValidationError, match=match):
            protocol.configure(bad, 2)
