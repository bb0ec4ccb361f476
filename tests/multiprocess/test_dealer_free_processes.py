"""``--dealer providers`` between five ``mpc-pca party`` processes over TLS (issue 39).

Three providers, the server and the consumer, each an ``mpc-pca party``
process with certificates made by ``mpc-pca certs``, run PPPCA with
``--reveal components --dealer providers``: the providers make every Beaver
triple and truncation pair among themselves before the eigensolve. The result
must be scikit-learn's within the bounds the run reports, as the in-process
run's is (``tests/pppca/test_pppca_dealer_free.py``), so the two agree within
the sum of their bounds; and the server must have dealt nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA

from tests.helpers.oracles import align_signs
from tests.multiprocess.test_streaming_party import run_parties, write_table

OPTIONS = ["--n-components", "2", "--reveal", "components", "--dealer", "providers"]


@pytest.mark.slow
@pytest.mark.processes
def test_five_party_processes_without_a_dealer_match_the_in_process_run(tmp_path: Path):
    parts = np.array_split(load_wine().data, 3)
    files = [write_table(tmp_path / f"site{i}.csv", part) for i, part in enumerate(parts)]
    # a 60 s receive timeout, shorter than the offline phase: the leader's reports after every item keep
    # the server's and (relayed) the consumer's waits alive
    result, done = run_parties(tmp_path, files, {rank: OPTIONS for rank in range(5)}, timeout=60)
    failed = {rank: p.stderr[-2000:] for rank, p in done.items() if p.returncode != 0}
    assert not failed, failed
    assert result is not None
    reference = PCA(2).fit(np.vstack(parts))
    components = np.asarray(result["components"])
    errors = np.max(np.abs(align_signs(components, reference.components_) - reference.components_), axis=1)
    assert np.all(errors <= np.asarray(result["component_error_bounds"]))
    np.testing.assert_allclose(result["explained_variance"], reference.explained_variance_, rtol=1e-6)
    assert result["secure_eigensolve"]["dealer"] == "providers"
    # the server dealt nothing: it sent the mean, T, the answer and the relayed offline progress
    # (about 70 bytes per item) to the consumer; a dealer sends wine's triples' corrections (about 50 kB)
    assert result["report"]["server"]["bytes_sent"] < 12_000
    assert np.asarray(result["projection"]).shape == (load_wine().data.shape[0], 2)
