"""A missing optional dependency is an input error (exit 3) with its ``pip install`` line, found before any work.

The absence is simulated (``sys.modules[name] = None`` makes a module
unimportable and unfindable), so these tests run where everything is installed.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

import mpc_pca.deploy.local as deploy_local
from mpc_pca.cli import build_parser, main
from mpc_pca.cli.options import installed
from mpc_pca.cli.party import party_command
from protocols.errors import InputValidationError

CRYPTEN_LINE = (
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    " && pip install 'mpc-pca[torch]' && pip install --no-deps crypten==0.4.1"
)


def absent(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def no_work(*args: object, **kwargs: object) -> None:
    raise AssertionError("work started although a dependency is missing")


@pytest.mark.parametrize("missing", [("torch",), ("crypten",), ("torch", "crypten")])
@pytest.mark.parametrize("extra", [[], ["--reveal", "components"]])
def test_run_with_crypten_missing_exits_3_before_any_party(monkeypatch, capsys, missing, extra):
    absent(monkeypatch, *missing)
    monkeypatch.setattr(deploy_local, "start_party_server", no_work)
    monkeypatch.setattr(importlib.import_module("mpc_pca.cli.app"), "provider_data", no_work)
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--backend", "crypten"]
    code = main([*argv, "--transport", "processes", "--insecure", *extra])
    err = capsys.readouterr().err
    assert code == 3
    # A base install (no torch extra) lacks the other one too; the message names every missing module.
    names = " and ".join(m for m in ("torch", "crypten") if m in missing or not installed(m))
    assert f"mpc-pca: error: --backend crypten needs {names}, which" in err
    assert CRYPTEN_LINE in err and "internal error" not in err and "Traceback" not in err


def test_party_with_crypten_missing_is_an_input_error(monkeypatch):
    absent(monkeypatch, "torch")
    env = {"RANK": "0", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    args = build_parser().parse_args(
        ["party", "--protocol", "pppca-ss", "--backend", "crypten", "--insecure"]
    )
    names = "torch" if installed("crypten") else "torch and crypten"
    with pytest.raises(
        InputValidationError, match=f"--backend crypten needs {names}, which (is|are) not installed"
    ):
        party_command(args, env)


def test_a_run_without_crypten_needs_no_torch(monkeypatch, tmp_path):
    absent(monkeypatch, "torch", "crypten")
    assert (
        main(
            ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--output", str(tmp_path / "r.json")]
        )
        == 0
    )


def test_study_without_matplotlib_exits_3_before_measuring(monkeypatch, capsys, tmp_path):
    absent(monkeypatch, "matplotlib")
    monkeypatch.setattr("mpc_pca.studies.framework.run_study", no_work)
    out = tmp_path / "results"
    assert main(["study", "scaling", "--quick", "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "mpc-pca study needs matplotlib, which is not installed: pip install 'mpc-pca[studies]'" in err
    assert not out.exists()
    assert main(["study", "--list"]) == 0  # listing draws nothing


def test_report_without_matplotlib_exits_3(monkeypatch, capsys, tmp_path):
    absent(monkeypatch, "matplotlib")
    assert main(["report", str(tmp_path)]) == 3
    assert "mpc-pca report needs matplotlib, which is not installed: pip install 'mpc-pca[studies]'" in (
        capsys.readouterr().err
    )


def test_plot_without_matplotlib_exits_3_and_writes_nothing(monkeypatch, capsys, tmp_path):
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"protocol": "pppca-ss", "explained_variance": [2.0, 1.0]}))
    absent(monkeypatch, "matplotlib")
    figure = tmp_path / "fig.png"
    assert main(["plot", str(result), "--out", str(figure)]) == 3
    assert "mpc-pca plot needs matplotlib, which is not installed: pip install 'mpc-pca[plots]'" in (
        capsys.readouterr().err
    )
    assert not os.path.exists(figure)
