"""The "population structure across biobanks" how-to runs as written and gives what it says (issue 37).

``docs/howto/population-structure.md`` writes five biobanks' ``.bed`` files
(three populations, uneven sites, missing calls), runs ``pppca-randomized``
as six ``mpc-pca party`` processes over TLS (five providers, each on its own
``.bed``, and the server), turns each biobank's scores into a covariate
file, and runs the same protocol in one process. Here every block runs as
the page shows it (only the page's port is replaced by a free one) and:

- the server's components and variances equal the one-process run's to 1e-8;
- each biobank's scores are its own imputed, standardized rows times that
  model's components (so every site read its own file, in its own order);
- the two components separate the three populations: k-means on the pooled
  scores puts at least 99 % of the individuals in their population's cluster.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.docs.test_blocks import shell_environment
from tests.helpers.markdown_blocks import page_of

PORT = "29517"  # the page's port, replaced by a free one
SITES = 5


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def _run(text: str, work: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (text, done.stdout[-2000:], done.stderr[-3000:])


def _script(marker: str) -> tuple[str, str]:
    """A python block's file name (its first line, ``# NAME.py: ...``) and its text."""
    text = page_of(marker).text
    name = text.splitlines()[0].split(":")[0].removeprefix("# ").strip()
    assert name.endswith(".py"), text[:80]
    return name, text


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    """The page's blocks, run in order in one directory; the directory."""
    root = tmp_path_factory.mktemp("population-structure")
    work = root / "work"
    work.mkdir()
    env = shell_environment(root)
    for marker in ("population-structure-data", "population-structure-covariates"):
        name, text = _script(marker)
        (work / name).write_text(text)
    parties = page_of("population-structure-parties").text
    assert PORT in parties and "python make_biobanks.py" in parties
    _run(parties.replace(PORT, _free_port()), work, env)
    _run("python covariates.py", work, env)
    _run(page_of("population-structure-one-process").text, work, env)
    return work


def _model(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.processes
def test_six_party_processes_over_tls_equal_the_one_process_run(ran):
    server, pooled = _model(ran / "server.json"), _model(ran / "pooled.json")
    for key in ("components", "explained_variance", "mean", "scale"):
        np.testing.assert_allclose(np.asarray(server[key]), np.asarray(pooled[key]), rtol=0, atol=1e-8)
    ids = [f"rs{1000 + j}" for j in range(2000)]  # in id order, which every site computes alone
    assert pooled["feature_names"] == ids
    # Between hosts no SNP id list is sent: the server knows the order (by id) and the sites' digests.
    assert server["feature_names"] is None and server["feature_order"] == "snp_id"
    assert len(server["snp_digests"]) == 2
    for site in range(SITES):
        assert _model(ran / f"biobank{site}.json")["feature_names"] == ids
    assert pooled["part_rows"] == [70, 80, 80, 10, 60]


@pytest.mark.slow
@pytest.mark.processes
def test_each_biobank_gets_its_own_scores_under_the_one_process_model(ran):
    from mpc_pca.data.plink import BedFile

    pooled = _model(ran / "pooled.json")
    components, mean, scale = (np.asarray(pooled[key]) for key in ("components", "mean", "scale"))
    for site in range(SITES):
        own = _model(ran / f"biobank{site}.json")
        rows = BedFile(ran / f"biobank{site}.bed").read()
        expected = ((rows - mean) / scale) @ components.T
        assert own["n_rows"] == len(rows)
        np.testing.assert_allclose(np.asarray(own["scores"]), expected, rtol=0, atol=1e-8)
        covar = (ran / f"biobank{site}.covar").read_text().splitlines()
        assert covar[0] == "FID IID PC1 PC2" and len(covar) == len(rows) + 1
        assert covar[1].split()[:2] == [f"biobank{site}", f"b{site}_0"]
        np.testing.assert_allclose([float(v) for v in covar[1].split()[2:]], expected[0], atol=1e-6)


@pytest.mark.slow
@pytest.mark.processes
def test_the_components_separate_the_three_populations(ran):
    from sklearn.cluster import KMeans

    scores = np.vstack([np.asarray(_model(ran / f"biobank{s}.json")["scores"]) for s in range(SITES)])
    truth = np.concatenate([np.loadtxt(ran / f"biobank{s}.populations.txt", dtype=int) for s in range(SITES)])
    clusters = KMeans(3, n_init=10, random_state=0).fit_predict(scores)
    # each cluster named by its most common population; the share of individuals whose cluster is theirs
    named = {c: np.bincount(truth[clusters == c], minlength=3).argmax() for c in range(3)}
    assert sorted(named.values()) == [0, 1, 2]
    agreement = np.mean([named[c] == t for c, t in zip(clusters, truth, strict=True)])
    assert agreement >= 0.99, agreement
