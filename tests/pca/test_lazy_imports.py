"""A party process imports only what it uses: no estimator, no scikit-learn (issue 15 start-up)."""

from __future__ import annotations

import subprocess
import sys

import mpc_pca


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
