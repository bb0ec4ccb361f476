"""The docs site: its generated reference covers the whole CLI and every module, and it builds strictly.

Also: every package's docstring lists every module and subpackage of that
package (the "Modules" list a reader of the API reference starts from).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.helpers.markdown_blocks import DOCS, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import docs_hooks

PACKAGES = ("protocols", "mpc_pca")


def all_modules() -> set[str]:
    names = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path.name == "__main__.py":
                continue
            relative = path.relative_to(ROOT).with_suffix("")
            names.add(".".join(relative.parent.parts if path.name == "__init__.py" else relative.parts))
    return names


def test_api_pages_document_every_module_once():
    documented: list[str] = []
    for page in sorted((DOCS / "reference" / "api").glob("*.md")):
        for package, shallow in docs_hooks.API_MARKER.findall(page.read_text()):
            documented += docs_hooks.api_modules(package, bool(shallow))
    assert len(documented) == len(set(documented)), sorted(n for n in documented if documented.count(n) > 1)
    assert set(documented) == all_modules(), {
        "missing": sorted(all_modules() - set(documented)),
        "unknown": sorted(set(documented) - all_modules()),
    }


def test_api_marker_expands_to_mkdocstrings_directives():
    text = docs_hooks.expand("<!-- api-modules: protocols.dp -->")
    assert text.splitlines()[0] == "::: protocols.dp"
    assert "::: protocols.dp.calibration" in text and "<!--" not in text
    assert "::: protocols.tensor" not in docs_hooks.expand("<!-- api-modules: protocols shallow -->")
    with pytest.raises(ValueError, match="not a package"):
        docs_hooks.api_modules("protocols.no_such_package")


def _parsers(parser: argparse.ArgumentParser, name: str = "mpc-pca"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_cli_reference_has_every_command_and_option():
    from mpc_pca.cli.app import build_parser

    page = docs_hooks.expand((DOCS / "reference" / "cli.md").read_text())
    assert docs_hooks.CLI_MARKER not in page
    parsers = list(_parsers(build_parser()))
    assert {"mpc-pca run", "mpc-pca party", "mpc-pca certs sign"} <= {name for name, _ in parsers}
    missing = []
    for name, parser in parsers:
        heading = f"## `{name}`"
        if heading not in page:
            missing.append(heading)
            continue
        section = page.split(heading, 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:  # hidden on purpose (internal to the launcher)
                continue
            missing += [f"{name} {option}" for option in action.option_strings if option not in section]
    assert not missing, missing


def _children(package_dir) -> set[str]:
    modules = {p.stem for p in package_dir.glob("*.py") if not p.stem.startswith("_")}
    return modules | {p.name for p in package_dir.iterdir() if (p / "__init__.py").is_file()}


def test_package_docstrings_list_every_module():
    unlisted = {}
    checked = 0
    for package in PACKAGES:
        for init in sorted((ROOT / package).rglob("__init__.py")):
            doc = ast.get_docstring(ast.parse(init.read_text())) or ""
            absent = [
                child
                for child in sorted(_children(init.parent))
                if not re.search(rf"(?<!\w){re.escape(child)}(?!\w)", doc)
            ]
            checked += 1
            if absent:
                unlisted[str(init.parent.relative_to(ROOT))] = absent
    assert checked >= 10, checked
    assert not unlisted, f"modules missing from their package's docstring: {unlisted}"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None and not os.environ.get("CI"),
    reason='mkdocs is not installed (pip install -e ".[docs]"); under CI it must be, and this test is its build',
)
def test_site_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "mpc-pca party" in cli and "--join-window" in cli
    api = (tmp_path / "site" / "reference" / "api" / "protocols" / "index.html").read_text()
    assert 'id="protocols.secure_sum.secure_sum"' in api or 'id="protocols.secure_sum"' in api
