"""What a newcomer's install pulls and what the wheel ships (issue 25: "the quick start pulls CUDA elsewhere").

The README's install (``pip install -e .``) and test (``pip install -e ".[test]"``)
commands are resolved against the public index with ``pip install --dry-run``,
ignoring this machine's pip configuration (its local CPU wheel of torch), as on
an ordinary Linux machine: neither may select torch, triton or a CUDA package.
These tests need the index and are skipped, saying so, when it cannot be reached.
The wheel is built from a copy of the source tree (nothing is written into the
checkout) and must hold every package of ``protocols`` and ``mpc_pca``, the
``mpc-pca`` command, no tests or benchmarks, and no torch in the base requirements.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The index the dry runs resolve against (override for a mirror of the public index).
INDEX_URL = os.environ.get("MPC_PCA_INDEX_URL", "https://pypi.org/simple")
#: Lint and hook tools: installed by the ``lint``/``dev`` extras, never by the base install or ``test``.
TOOLS = {"ruff", "mypy", "import-linter", "pre-commit"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def is_torch_or_cuda(name: str) -> bool:
    """torch, triton, and the CUDA wheels a manylinux torch pulls (``nvidia-*``, ``cuda-*``)."""
    name = normalized(name)
    return name in {"torch", "triton"} or name.startswith(("nvidia-", "cuda-"))


@functools.cache
def index_unreachable() -> str | None:
    """Why the index cannot be used here (``None``: it can): a TCP connect to its host, 3 s at most."""
    parts = urlsplit(INDEX_URL)
    if parts.scheme == "file":
        return None
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        return f"the package index {INDEX_URL} is unreachable from here ({exc}); the dry-run needs it"
    return None


def isolated_pip_env() -> dict[str, str]:
    """The environment without pip configuration: no find-links (a local torch wheel), constraints or extra indexes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def dry_run(requirement: str, report: Path) -> list[str]:
    """Names of the distributions ``pip install requirement`` would install into an empty environment."""
    reason = index_unreachable()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--quiet",
            "--ignore-installed", "--index-url", INDEX_URL, "--report", str(report), requirement,
        ],
        capture_output=True, text=True, env=isolated_pip_env(), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return sorted(normalized(item["metadata"]["name"]) for item in json.loads(report.read_text())["install"])


@pytest.mark.slow
@pytest.mark.parametrize("extra", ["", "[test]"], ids=["base", "test-extra"])
def test_readme_install_resolves_without_torch_or_cuda(extra, tmp_path):
    names = dry_run(f"{ROOT}{extra}", tmp_path / "report.json")
    assert "mpc-pca" in names and "numpy" in names, names  # the resolution really happened
    assert [n for n in names if is_torch_or_cuda(n)] == [], names
    assert TOOLS.isdisjoint(names), f"lint tools in a user's install: {sorted(TOOLS & set(names))}"
    if extra:
        assert {"pytest", "hypothesis"} <= set(names), names
    else:
        assert "bed-reader" not in names, names  # the genotype extra's, never the base install's
    print(f"pip install {ROOT.name}{extra}: {len(names)} distributions: {' '.join(names)}")


def test_ci_installs_the_pinned_torch_and_every_extra_it_uses():
    """``.ci/run`` installs the ``test``, ``lint``, ``torch``, ``docs``, ``genotype``, ``bench-genotype`` and ``flower`` extras; its CPU torch is the pin."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    pin = re.search(r'^torch = \["(torch==[^"]+)"', pyproject, re.M).group(1)
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -q -e ".[test,lint,torch,docs,genotype,bench-genotype,flower]"' in ci
    assert re.search(
        r'^flower = \["flwr==[0-9.]+"\]', pyproject, re.M
    )  # pinned: the workflow follows its API
    assert re.search(r'^genotype = \["bed-reader==', pyproject, re.M)
    assert re.search(r'^bench-genotype = \["msprime==[0-9.]+", "bed-reader==', pyproject, re.M)
    # The docs site is built by tests/docs/test_site.py, which CI runs (it may not skip under CI).
    assert re.search(r'^CI="\$\{CI:-1\}" (\S+=\S+ )*pytest -q$', ci, re.M), (
        "CI does not run the suite with CI set"
    )
    assert re.search(r'^docs = \[.*"mkdocs>=.*"mkdocstrings\[python\]', pyproject, re.M)
    assert set(re.findall(r"torch==[\w.+]+", ci)) == {pin}
    assert re.search(r'^lint = \[.*"ruff.*"mypy.*"import-linter', pyproject, re.M)


def test_ci_runs_the_built_wheel_from_outside_the_checkout():
    """Issue 25: a wheel installed non-editable into a clean environment runs ``--help`` and the main job."""
    ci = (ROOT / ".ci" / "run").read_text()
    readme_job = re.search(r"^pip install -e \. && (mpc-pca run .*)$", (ROOT / "README.md").read_text(), re.M)
    assert readme_job, "the README's install line changed"
    assert re.search(r"^python -m pip wheel -q --no-deps -w (\S+) \. ", ci, re.M)
    assert re.search(
        r"^python3 -m venv \.venv-wheel$", ci, re.M
    )  # a fresh environment, not --system-site-packages
    assert re.search(r"^\.venv-wheel/bin/python -m pip install -q \.wheel-ci/mpc_pca-\*\.whl$", ci, re.M)
    assert '(cd "$(mktemp -d)" && "$OLDPWD/.venv-wheel/bin/mpc-pca" --help' in ci
    job = readme_job.group(1).removeprefix("mpc-pca ")
    assert f'"$OLDPWD/.venv-wheel/bin/mpc-pca" {job})' in ci


def _copy_source(destination: Path) -> Path:
    """The files a wheel is built from, plus ``tests``/``benchmarks`` (which it must leave out)."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "results", "*.egg-info")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, destination / name)
    for name in ("protocols", "mpc_pca", "tests", "benchmarks"):
        shutil.copytree(ROOT / name, destination / name, ignore=skip)
    return destination


def _setuptools_for_build() -> bool:
    """Whether this environment can build without an isolated build environment (setuptools >= 77)."""
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 77


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Iterator[zipfile.ZipFile]:
    source = _copy_source(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)]
    if _setuptools_for_build():
        command.insert(4, "--no-build-isolation")
    else:  # the build environment (setuptools) comes from the index
        reason = index_unreachable()
        if reason:
            pytest.skip(f"no setuptools >= 77 here and {reason}")
        command[4:4] = ["--isolated", "--index-url", INDEX_URL]
    env = os.environ if _setuptools_for_build() else isolated_pip_env()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("mpc_pca-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


def test_wheel_holds_every_package_and_module_and_nothing_else(wheel):
    names = set(wheel.namelist())
    expected = {
        path.relative_to(ROOT).as_posix()
        for package in ("protocols", "mpc_pca")
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert expected - names == set(), sorted(expected - names)
    packages = {p.rsplit("/", 1)[0] for p in expected if p.endswith("/__init__.py")}
    assert {"protocols/dp", "protocols/runtime", "mpc_pca/deploy"} <= packages
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"protocols", "mpc_pca"}, sorted(top)
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]


def test_wheel_has_the_command_and_no_torch_in_the_base_requirements(wheel):
    (info,) = {n.split("/")[0] for n in wheel.namelist() if n.endswith(".dist-info/METADATA")}
    entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert re.search(r"^\[console_scripts\]\s*\nmpc-pca = mpc_pca\.cli:main$", entry_points, re.M), (
        entry_points
    )
    metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
    requires = metadata.get_all("Requires-Dist") or []
    base = [r for r in requires if "extra ==" not in r]
    assert base and not [r for r in base if is_torch_or_cuda(re.match(r"[\w.-]+", r).group(0))], base
    torch = [r for r in requires if normalized(re.match(r"[\w.-]+", r).group(0)) == "torch"]
    assert torch and all('extra == "torch"' in r for r in torch), torch
    for tool in TOOLS:
        assert all("extra ==" in r for r in requires if normalized(re.match(r"[\w.-]+", r).group(0)) == tool)
