"""A party process imports only what it uses: no estimator, no scikit-learn (issue 15 start-up)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mpc_pca

ROOT = Path(__file__).resolve().parents[2]


def test_party_code_and_the_parser_do_not_import_scikit_learn():
    code = (
        "import sys\n"
        "from mpc_pca.cli.app import build_parser\n"
        "import mpc_pca.deploy, mpc_pca.pppca.deployment, mpc_pca.registry, protocols.runtime.network\n"
        "build_parser()\n"
        "print(sorted(m for m in ('sklearn', 'mpc_pca.dp.baselines', 'mpc_pca.pppca.estimator') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_package_exports_resolve_on_first_use():
    from mpc_pca.pppca.estimator import PPPCA

    assert mpc_pca.PPPCA is PPPCA and "PPPCA" in dir(mpc_pca)
    assert set(mpc_pca.__all__) <= set(dir(mpc_pca))
    for name in mpc_pca.__all__:
        assert getattr(mpc_pca, name).__name__ == name


def test_importing_a_cli_module_first_never_shadows_the_exported_main():
    """``from mpc_pca.cli import main`` is the function whatever was imported before (it was a module)."""
    code = (
        "import mpc_pca.cli.app, mpc_pca.cli.party, mpc_pca.cli.runners\n"
        "from mpc_pca.cli import build_parser, main\n"
        "print(callable(main), callable(build_parser), type(main).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "function"], out.stdout


#: Installed as ``sitecustomize`` in every interpreter of a run (parent, fork server, parties): any attempt
#: to import torch or CrypTen, found or not, is written to $MPC_PCA_TORCH_RECORD.
TORCH_RECORDER = """
import os, sys


class _TorchRecorder:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "crypten"):
            with open(os.environ["MPC_PCA_TORCH_RECORD"], "a") as record:
                record.write(f"{os.getpid()} {name}\\n")
        return None


sys.meta_path.insert(0, _TorchRecorder())
"""


@pytest.mark.parametrize("transport", ["inprocess", "processes"])
def test_the_main_job_never_imports_torch(transport, tmp_path):
    """The README's main job (PPPCA-SS; parties as threads or as processes over TLS sockets) needs no torch."""
    (tmp_path / "sitecustomize.py").write_text(TORCH_RECORDER)
    record = tmp_path / "torch-imports.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH")) if p
        ),
        "MPC_PCA_TORCH_RECORD": str(record),
    }
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:wine", "--parties", "3", "--n-components", "2"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "mpc_pca.cli", *argv, "--transport", transport, "--output", str(tmp_path / "r.json")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "r.json").exists()
    assert not record.exists(), record.read_text()


#: Runs ``mpc-pca party`` in a fresh interpreter up to the moment it would read its data and open its
#: links (argument parsing, option checks, the registry, the deployment), then imports every module its
#: role runs, and prints which of the heavy libraries were imported.
PARTY_IMPORTS = """
import sys
import mpc_pca.deploy.party as floor
from mpc_pca.cli.app import build_parser
from mpc_pca.cli.party import party_command


class Reached(Exception):
    pass


def stop(spec, deployment):
    raise Reached(spec.party)


floor.prepare = stop
args = build_parser().parse_args(sys.argv[1:])
try:
    party_command(args, env={})
except Reached:
    pass
else:
    raise SystemExit("the party did not reach its run")
import mpc_pca.pppca.protocol, mpc_pca.pppca.deployment, protocols.backends.additive  # noqa: E401,F401
import protocols.runtime.network, protocols.transport.tls  # noqa: E401,F401
print(sorted({name.split(".")[0] for name in sys.modules} & {"sklearn", "pandas", "scipy"}))
"""


@pytest.mark.parametrize("rank", [0, 2])
def test_a_pppca_ss_party_imports_neither_scikit_learn_nor_pandas_nor_scipy(rank, tmp_path):
    """Issue 28: a party's start-up loads only what PPPCA-SS uses (provider: rank 0, server: rank 2)."""
    data = ["--data", "builtin:wine"] if rank == 0 else []
    argv = ["party", "--protocol", "pppca-ss", "--rank", str(rank), "--world-size", "4",
            "--master", "127.0.0.1:9", "--insecure", *data]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    out = subprocess.run(
        [sys.executable, "-c", PARTY_IMPORTS, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
