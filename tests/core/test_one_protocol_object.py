"""Every estimator and ``run_threads`` run the registry's protocol object: one implementation per protocol.

For every registered protocol, an estimator's ``fit`` and
:func:`mpc_pca.deploy.run_threads` both hand the same class of protocol object
(the registry's) to :func:`mpc_pca.threads.run_protocol`, and no party network
is built anywhere else (a second, per-protocol driver would build its own).
Where the estimator's parameters are all protocol settings, the two runs give
the same components bit for bit for the same noise seed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mpc_pca.fitting
import mpc_pca.threads
from mpc_pca import (
    DPDPCA,
    PPPCA,
    PPPCADP,
    AnalyzeGaussPCA,
    CapeAGN,
    CapePCA,
    DPdisPCA,
    ExponentialMechanismPCA,
    LocalPCA,
    PooledPCA,
    PrivatePowerMethodPCA,
    RetractedSNPCA,
)
from mpc_pca.deploy import run_threads
from mpc_pca.registry import entry, names
from protocols.backends import make_backend
from protocols.transport.inprocess import InProcessNetwork

SEED = 7
#: Each protocol's estimator, and whether all of its parameters here are protocol settings (then the
#: estimator and run_threads must agree bit for bit on the components).
ESTIMATORS: dict[str, tuple[Callable[[], Any], bool]] = {
    "pppca-ss": (lambda: PPPCA(2), True),
    "pppca-he": (
        lambda: PPPCA(2, backend=make_backend("paillier", key_bits=512, allow_insecure_key_size=True)),
        False,
    ),
    "pppca-dp": (lambda: PPPCADP(2, epsilon=math.inf), True),
    "pppca-randomized": (lambda: PPPCA(2, svd_solver="randomized", random_state=SEED), True),
    "ag": (lambda: AnalyzeGaussPCA(2, random_state=SEED), True),
    "sn": (lambda: RetractedSNPCA(2, epsilon=5.0, random_state=SEED), True),
    "ppm": (lambda: PrivatePowerMethodPCA(2, random_state=SEED), True),
    "ppca": (lambda: ExponentialMechanismPCA(2, n_sweeps=3, random_state=SEED), False),
    "pooled": (lambda: PooledPCA(2), True),
    "local": (lambda: LocalPCA(2, random_state=SEED), True),
    "dispca": (lambda: DPdisPCA(2, random_state=SEED), True),
    "dispca-full": (lambda: DPdisPCA(2, full=True, random_state=SEED), True),
    "dpdpca": (
        lambda: DPDPCA(
            2, key_bits=256, allow_insecure_key_size=True, frac_bits=8, mask_bits=40, random_state=SEED
        ),
        False,
    ),
    "capepca": (lambda: CapePCA(2, random_state=SEED), True),
    "capeagn": (
        lambda: CapeAGN(2, model="mog", sigma=0.1, n_restarts=2, n_iter=20, random_state=SEED),
        False,
    ),
}


#: Registered protocols with no estimator yet, and why; run_threads must still run the registry's object.
WITHOUT_ESTIMATOR: dict[str, str] = {}


def test_every_registered_protocol_has_an_estimator_here():
    assert sorted([*ESTIMATORS, *WITHOUT_ESTIMATOR]) == sorted(names())
    assert not set(ESTIMATORS) & set(WITHOUT_ESTIMATOR)


@pytest.fixture
def parts() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(90, 5)) / 6
    return np.array_split(rows, 3)


@pytest.fixture
def runs(monkeypatch) -> list[Any]:
    """The protocol objects ``run_protocol`` was given; fails a network built outside it."""
    given: list[Any] = []
    inside = [0]
    real_run = mpc_pca.threads.run_protocol
    real_init = InProcessNetwork.__init__

    def spy(protocol: Any, *args: Any, **kwargs: Any) -> Any:
        given.append(protocol)
        inside[0] += 1
        try:
            return real_run(protocol, *args, **kwargs)
        finally:
            inside[0] -= 1

    def network(self: Any, *args: Any, **kwargs: Any) -> None:
        assert inside[0], "a party network was built outside mpc_pca.threads.run_protocol"
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(mpc_pca.threads, "run_protocol", spy)
    monkeypatch.setattr(mpc_pca.fitting, "run_protocol", spy)
    monkeypatch.setattr(InProcessNetwork, "__init__", network)
    return given


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_the_estimator_and_run_threads_run_the_registry_protocol_object(name, parts, runs):
    make, settings_only = ESTIMATORS[name]
    registered = type(entry(name))
    estimator = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(parts)
    assert [type(p) for p in runs] == [registered] and runs[0].name == name
    if not settings_only:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_threads(name, parts, estimator._settings(), noise_seed=SEED)
    assert [type(p) for p in runs] == [registered, registered] and runs[1].name == name
    assert np.array_equal(np.asarray(result["components"]), estimator.components_)


@pytest.mark.parametrize("name", list(WITHOUT_ESTIMATOR))
def test_run_threads_runs_the_registry_object_of_a_protocol_without_an_estimator(name, parts, runs):
    result = run_threads(name, parts, {"n_components": 2})
    assert [type(p) for p in runs] == [type(entry(name))] and runs[0].name == name
    components = np.asarray(result["components"])
    assert components.shape == (2, 5) and np.allclose(components @ components.T, np.eye(2), atol=1e-12)
