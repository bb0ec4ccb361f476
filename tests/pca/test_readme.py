"""The README's Python examples run and print what they claim."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_blocks_run(index, capsys):
    namespace: dict = {}
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), namespace)
    assert capsys.readouterr().out.strip()


def test_secure_mean_example_is_correct():
    namespace: dict = {}
    exec(compile(BLOCKS[0], "README.md block 0", "exec"), namespace)
    assert np.allclose(namespace["run"].outputs["analyst"], [4.0, 2.0, 2.0], atol=1e-6)
    assert namespace["run"].outputs["h0"] is None


def test_readme_has_exactly_the_two_setup_commands():
    bash_blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    assert bash_blocks[0].strip().startswith("pip install") and "mpc-pca run" in bash_blocks[0]
    assert bash_blocks[1].strip() == "pytest -q"


def test_verify_your_own_backend_example_fails_as_documented(capsys):
    """The broken backend of "Verify your own backend" is flagged with exactly the message shown."""
    index = next(i for i, block in enumerate(BLOCKS) if "class DebugCopy" in block)
    exec(compile(BLOCKS[index], f"README.md block {index}", "exec"), {})
    printed = capsys.readouterr().out.strip()
    documented = re.search(r"prints\n\n```text\n(.*?)```", README.read_text(), flags=re.S).group(1).strip()
    assert printed == documented
    assert printed.startswith("secure-sum conformance: property 'view independence' failed for DebugCopy(")
