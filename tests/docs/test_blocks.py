"""Every code block of the README and of the docs site runs (or is checked) in the tests.

A plain ``python`` block runs here as it is (a block whose first line is
``# NAME.py`` runs as its own interpreter). Any other block carries a marker
``<!-- NAME: tests/FILE.py ... -->`` naming the test that runs it; this file
runs the generic kinds itself, by the marker's prefix:

``run-``
    a shell block, run with bash in an empty directory (``mpc-pca`` and
    ``python`` are this interpreter and this checkout);
``cli-``
    command lines for other hosts: every ``mpc-pca`` line (``X:`` labels and
    ``#`` comments aside) must parse with the real argument parser;
``api-``
    a Python sketch with placeholders: it compiles and its imports resolve.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.markdown_blocks import ROOT, Block, all_blocks, page_of

GENERIC = ("run-", "cli-", "api-")
THIS_FILE = "tests/docs/test_blocks.py"
SCRIPT = re.compile(r"# (\w+\.py)\b")
BLOCKS = all_blocks()


def _ids(blocks: list[Block]) -> list[str]:
    return [b.marker or b.where for b in blocks]


PYTHON = [b for b in BLOCKS if b.lang == "python" and b.marker is None]
SHELL = [b for b in BLOCKS if (b.marker or "").startswith("run-")]
CLI = [b for b in BLOCKS if (b.marker or "").startswith("cli-")]
API = [b for b in BLOCKS if (b.marker or "").startswith("api-")]


def test_every_block_is_run_by_a_test():
    assert len(BLOCKS) > 30 and PYTHON and SHELL and CLI  # the pages were really read
    unclaimed = []
    for b in BLOCKS:
        if b.marker is None:
            if b.lang != "python":
                unclaimed.append(f"{b.where}: a {b.lang or 'plain'} block without a marker")
            continue
        test_file = ROOT / b.test_file
        if not test_file.is_file():
            unclaimed.append(f"{b.where}: marker {b.marker!r} names {b.test_file}, which does not exist")
        elif not (b.test_file == THIS_FILE and b.marker.startswith(GENERIC)) and (
            f'"{b.marker}"' not in test_file.read_text()
        ):
            unclaimed.append(f"{b.where}: {b.test_file} never reads the block marked {b.marker!r}")
    assert not unclaimed, "\n".join(unclaimed)


def test_markers_are_unique():
    markers = [b.marker for b in BLOCKS if b.marker]
    assert len(markers) == len(set(markers)), sorted(m for m in markers if markers.count(m) > 1)


def run_script(text: str, directory: Path) -> str:
    """Write a ``# NAME.py`` block to ``directory`` and run it as its own interpreter; return stdout."""
    name = SCRIPT.match(text).group(1)
    (directory / name).write_text(text)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    done = subprocess.run(
        [sys.executable, name], cwd=directory, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("b", PYTHON, ids=_ids(PYTHON))
def test_python_blocks_run(b, capsys, tmp_path):
    if SCRIPT.match(b.text):
        assert run_script(b.text, tmp_path).strip()
        return
    exec(compile(b.text, b.where, "exec"), {"__name__": "__doc_block__"})
    assert capsys.readouterr().out.strip(), f"{b.where} printed nothing"


def shell_environment(directory: Path) -> dict[str, str]:
    """``PATH`` with ``mpc-pca`` and ``python`` that run this interpreter on this checkout."""
    bin_dir = directory / ".bin"
    bin_dir.mkdir()
    (bin_dir / "mpc-pca").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mpc_pca "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": python_path}


def run_shell(text: str, directory: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    work = directory / "work"
    work.mkdir()
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text],
        cwd=work,
        env=shell_environment(directory),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.parametrize("b", SHELL, ids=_ids(SHELL))
def test_shell_blocks_run(b, tmp_path):
    done = run_shell(b.text, tmp_path)
    assert done.returncode == 0, f"{b.where}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def cli_lines(text: str) -> list[list[str]]:
    """The ``mpc-pca`` command lines of a block as argv lists (an ``X:`` label before each removed)."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        line = re.sub(r"^[A-Z]: ", "", line.strip())
        if not line or line.startswith("#"):
            continue
        argv = shlex.split(line, comments=True)
        assert argv[0] == "mpc-pca", f"not an mpc-pca command: {line!r}"
        commands.append(argv[1:])
    return commands


@pytest.mark.parametrize("b", CLI, ids=_ids(CLI))
def test_cli_blocks_parse(b):
    from mpc_pca.cli.app import build_parser

    commands = cli_lines(b.text)
    assert commands, f"{b.where}: no mpc-pca command"
    for argv in commands:
        try:
            build_parser().parse_args(argv)
        except SystemExit as exit_:  # argparse's usage error (it printed why)
            pytest.fail(f"{b.where}: `mpc-pca {shlex.join(argv)}` does not parse (exit {exit_.code})")


def test_cli_lines_are_refused_when_wrong():
    """The parse check can fail: an option that does not exist is a usage error."""
    from mpc_pca.cli.app import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(cli_lines("A: mpc-pca party --protocol pppca-ss --no-such-option 1")[0])


@pytest.mark.parametrize("b", API, ids=_ids(API))
def test_api_sketches_compile_and_import(b):
    tree = ast.parse(b.text, b.where)
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert imports, f"{b.where}: no import"
    exec(compile(ast.Module(body=imports, type_ignores=[]), b.where, "exec"), {})


def test_layout_tree_names_existing_directories():
    tree = page_of("layout-tree").text
    directories = re.findall(r"^\s*([\w.]+/)\s", tree, flags=re.M)
    assert len(directories) >= 10, directories
    top = None
    missing = []
    for line in tree.splitlines():
        match = re.match(r"^(\s*)([\w.]+/)\s", line)
        if not match:
            continue
        if not match.group(1):
            top = ROOT / match.group(2)
            path = top
        else:
            path = top / match.group(2)
        if not path.is_dir():
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, missing


def test_mutation_commands_use_the_script_the_extra_and_the_scope():
    commands = page_of("mutation-commands").text
    assert '".[test,mutation]"' in commands and "tools/mutation.sh 2" in commands
    assert os.access(ROOT / "tools" / "mutation.sh", os.X_OK)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^mutation = \[", pyproject, re.M) and "[tool.mutmut]" in pyproject


@pytest.mark.parametrize("marker", ["benchmark-modules", "benchmark-commands"])
def test_benchmark_modules_exist(marker):
    modules = re.findall(r"python -m ([\w.]+)", page_of(marker).text)
    assert len(modules) >= 5, modules
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    assert not missing, missing


def test_waiting_room_log_line_is_the_rendezvous_own():
    from protocols.transport.rendezvous import waiting_line

    line = page_of("waiting-room-log").text.strip()
    match = re.fullmatch(
        r"\d\d:\d\d:\d\d INFO (waiting room: joined \[(.*)\]; missing \[(.*)\] \((\d+) s left\))", line
    )
    assert match, line
    joined, missing = (group.split(", ") for group in match.group(2, 3))
    assert waiting_line(joined, missing, float(match.group(4))) == match.group(1)
