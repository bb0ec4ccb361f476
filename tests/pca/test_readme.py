"""The README's Python examples run and print what they claim."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


ROOT = README.parent
#: A block whose first line is ``# NAME.py...`` is a script: it runs as ``python NAME.py``.
SCRIPT = re.compile(r"# (\w+\.py)\b")


def run_script(block: str, directory: Path) -> str:
    """Write a README script block to ``directory`` and run it as its own interpreter; return stdout."""
    name = SCRIPT.match(block).group(1)
    (directory / name).write_text(block)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    done = subprocess.run(
        [sys.executable, name], cwd=directory, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_blocks_run(index, capsys, tmp_path):
    if SCRIPT.match(BLOCKS[index]):
        assert run_script(BLOCKS[index], tmp_path).strip()
        return
    namespace: dict = {}
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), namespace)
    assert capsys.readouterr().out.strip()


def test_secure_mean_example_runs_as_three_hospitals_and_an_analyst_over_tls(tmp_path):
    """The README's secure-sum roles as four processes (``run_processes``: TLS links by default)."""
    block = next(b for b in BLOCKS if SCRIPT.match(b) and "run_processes" in b)
    assert "insecure" not in block  # the links are TLS 1.3 with throw-away certificates
    in_process: dict = {}
    exec(compile(BLOCKS[0], "README.md block 0", "exec"), in_process)
    lines = run_script(block, tmp_path).strip().splitlines()
    mean = np.array([float(v) for v in lines[0].strip("[]").split()])
    assert np.allclose(mean, [4.0, 2.0, 2.0], atol=1e-6)
    assert int(lines[1]) == in_process["run"].reports["h0"].bytes_sent > 0


def test_secure_mean_example_is_correct():
    namespace: dict = {}
    exec(compile(BLOCKS[0], "README.md block 0", "exec"), namespace)
    assert np.allclose(namespace["run"].outputs["analyst"], [4.0, 2.0, 2.0], atol=1e-6)
    assert namespace["run"].outputs["h0"] is None


def setup_section() -> str:
    text = README.read_text()
    start = text.index("## Set up and run\n")
    return text[start : text.index("\n## ", start + 1)]


def test_readme_has_exactly_the_two_setup_commands():
    """Install + main job, then tests, each one line; torch/CrypTen is a third, optional line."""
    install, tests, optional = re.findall(r"```bash\n(.*?)```", setup_section(), flags=re.S)
    assert "\n" not in install.strip() and "\n" not in tests.strip() and "\n" not in optional.strip()
    assert install.startswith("pip install -e . && mpc-pca run --protocol pppca-ss ")
    assert "torch" not in install and "[" not in install  # the base install: no extra, no torch
    assert tests.strip() == 'pip install -e ".[test]" && pytest -q'
    assert "Optional: torch and CrypTen" in setup_section().split(optional)[0].split(tests)[1]


def test_readme_torch_line_installs_the_pinned_cpu_build_first():
    pin = re.search(r'^torch = \["(torch==[^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    optional = re.findall(r"```bash\n(.*?)```", setup_section(), flags=re.S)[2].strip()
    steps = optional.split(" && ")
    assert steps == [
        f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu",
        'pip install -e ".[torch]"',
        "pip install --no-deps crypten==0.4.1",
    ]


def test_verify_your_own_backend_example_fails_as_documented(capsys):
    """The broken backend of "Verify your own backend" is flagged with exactly the message shown."""
    index = next(i for i, block in enumerate(BLOCKS) if "class DebugCopy" in block)
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})
    printed = capsys.readouterr().out.strip()
    documented = re.search(r"prints\n\n```text\n(.*?)```", README.read_text(), flags=re.S).group(1).strip()
    assert printed == documented
    assert printed.startswith("secure-sum conformance: property 'view independence' failed for DebugCopy(")
