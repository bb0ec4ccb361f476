"""PPPCA(reveal="components") with every party a process over TLS socket links on loopback."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from tests.helpers.oracles import align_signs

pytest.importorskip("torch", reason="torch is not installed (README, 'Set up and run': optional line)")


@pytest.mark.torch
@pytest.mark.slow
def test_components_mode_over_processes_matches_sklearn():
    from mpc_pca.deploy import launch_local

    data = StandardScaler().fit_transform(load_iris().data)
    result = launch_local(
        "pppca-ss", np.array_split(data, 2), {"n_components": 2, "reveal": "components"}, timeout=120
    )
    ref = PCA(2).fit(data)
    components = np.array(result["components"])
    assert np.max(np.abs(align_signs(components, ref.components_) - ref.components_)) < 1e-4
    np.testing.assert_allclose(result["explained_variance"], ref.explained_variance_, rtol=1e-5)
    assert result["secure_eigensolve"]["reveal"] == "components"
    # the server (dealer) received only the statistics sum, holder 0's decisions (three numbers per
    # iteration), the revealed basis, Ritz matrix and trace
    assert result["report"]["server"]["bytes_received"] < 6_000
    assert result["report"]["provider0"]["rounds"] < 100
