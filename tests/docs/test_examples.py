"""The docs' Python examples print what they claim (every block also runs in ``test_blocks.py``).

The secure-sum tutorial's roles run in one process, as four local processes
over TLS, and across "hosts" (four ``run_party`` processes on loopback with
certificates from ``mpc-pca certs``); the conformance kit's broken backend
is flagged with exactly the message the page shows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.docs.test_blocks import SCRIPT, run_script
from tests.helpers.markdown_blocks import DOCS, ROOT, block, page_of

SECURE_SUM = DOCS / "tutorials" / "secure-sum.md"
KIT = DOCS / "howto" / "conformance-kit.md"


def _in_process() -> dict:
    namespace: dict = {}
    first = block(SECURE_SUM, ordinal=0, lang="python")
    exec(compile(first.text, first.where, "exec"), namespace)
    return namespace


def test_secure_mean_example_is_correct():
    run = _in_process()["run"]
    assert np.allclose(run.outputs["analyst"], [4.0, 2.0, 2.0], atol=1e-6)
    assert run.outputs["h0"] is None


def test_secure_mean_example_runs_as_three_hospitals_and_an_analyst_over_tls(tmp_path):
    """The tutorial's secure-sum roles as four processes (``run_processes``: TLS links by default)."""
    script = block(SECURE_SUM, ordinal=1, lang="python").text
    assert SCRIPT.match(script) and "run_processes" in script
    assert "insecure" not in script  # the links are TLS 1.3 with throw-away certificates
    lines = run_script(script, tmp_path).strip().splitlines()
    mean = np.array([float(v) for v in lines[0].strip("[]").split()])
    assert np.allclose(mean, [4.0, 2.0, 2.0], atol=1e-6)
    assert int(lines[1]) == _in_process()["run"].reports["h0"].bytes_sent > 0


@pytest.mark.slow
def test_secure_mean_party_script_runs_across_hosts_with_certificates(tmp_path):
    """``secure_mean_party.py`` as four processes, rank 0 hosting the rendezvous, TLS from ``mpc-pca certs``."""
    from tests.helpers.socket_helpers import free_port

    script = page_of("secure-mean-party").text
    (tmp_path / "secure_mean_party.py").write_text(script)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    names = ["h0", "h1", "h2", "analyst"]
    certs = [sys.executable, "-m", "mpc_pca", "certs", "--parties", ",".join(names), "--out", "tls"]
    subprocess.run(certs, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)
    master = f"127.0.0.1:{free_port()}"
    parties = [
        subprocess.Popen(
            [sys.executable, "secure_mean_party.py", name, master],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    printed = {}
    for name, party in zip(names, parties, strict=True):
        out, err = party.communicate(timeout=180)
        assert party.returncode == 0, f"{name}: {err[-3000:]}"
        printed[name] = out.strip()
    assert re.fullmatch(r"analyst \[4\. 2\. 2\.\] 0", printed["analyst"]), printed
    for name in names[:3]:
        assert re.fullmatch(rf"{name} None [1-9]\d*", printed[name]), printed


def test_verify_your_own_backend_example_fails_as_documented(capsys):
    """The broken backend of the conformance kit's page is flagged with exactly the message shown."""
    example = next(
        b for b in (block(KIT, ordinal=i, lang="python") for i in range(2)) if "class DebugCopy" in b.text
    )
    exec(compile(example.text, example.where, "exec"), {})
    printed = capsys.readouterr().out.strip()
    documented = page_of("debugcopy-output").text.strip()
    assert printed == documented
    assert printed.startswith("secure-sum conformance: property 'view independence' failed for DebugCopy(")


def test_conformance_plugin_block_names_a_real_plugin_fixture_and_options():
    """``conformance-plugin``: the plugin module exists, defines the fixture and registers both options."""
    text = page_of("conformance-plugin").text
    plugin = re.search(r'pytest_plugins = \["([\w.]+)"\]', text).group(1)
    fixture = re.search(r"def test_my_backend\((\w+)\)", text).group(1)
    options = re.findall(r"--[\w-]+", text)
    source = Path(ROOT, *plugin.split(".")).with_suffix(".py").read_text()
    assert f"def {fixture}(" in source
    assert options and all(f'"{option}"' in source for option in options), options
    compile(text, "conformance-plugin", "exec")
