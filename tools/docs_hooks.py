"""MkDocs hooks (``hooks:`` in ``mkdocs.yml``): the generated parts of the reference.

Two markers in a page's Markdown are replaced when the site is built, so the
reference can never drift from the code:

``<!-- cli-reference -->``
    The ``--help`` of ``mpc-pca`` and of every subcommand, walked from the
    argparse parser of :mod:`mpc_pca.cli` (:func:`cli_reference`).
``<!-- api-modules: PACKAGE -->`` (or ``PACKAGE shallow``)
    One mkdocstrings ``::: module`` directive per module of ``PACKAGE``
    (:func:`api_modules`); ``shallow`` leaves out its subpackages, which have
    pages of their own.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # mkdocs loads this file by path; the packages live beside it
    sys.path.insert(0, str(ROOT))

CLI_MARKER = "<!-- cli-reference -->"
API_MARKER = re.compile(r"<!-- api-modules: ([\w.]+)( shallow)? -->")
#: Width of the generated ``--help`` text (the terminal's width does not matter).
HELP_COLUMNS = 100


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(name, parser)`` of every subcommand of ``parser``, depth first, in definition order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for deeper, subsub in _subcommands(sub):
                    yield f"{name} {deeper}", subsub


def _help(parser: argparse.ArgumentParser) -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        return parser.format_help().rstrip()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """Markdown: one section per command of ``mpc-pca`` with its full ``--help``."""
    if parser is None:
        from mpc_pca.cli.app import build_parser

        parser = build_parser()
    prog = parser.prog
    sections = [f"## `{prog}`\n\n```text\n{_help(parser)}\n```\n"]
    for name, sub in _subcommands(parser):
        sections.append(f"## `{prog} {name}`\n\n```text\n{_help(sub)}\n```\n")
    return "\n".join(sections)


def api_modules(package: str, shallow: bool = False) -> list[str]:
    """Dotted names of ``package`` and its modules (``__main__`` excluded), sorted, package first."""
    directory = ROOT.joinpath(*package.split("."))
    if not (directory / "__init__.py").is_file():
        raise ValueError(f"api-modules: {package!r} is not a package under {ROOT}")
    names = []
    for path in sorted(directory.rglob("*.py") if not shallow else directory.glob("*.py")):
        if path.name == "__main__.py" or any(part == "__pycache__" for part in path.parts):
            continue
        relative = path.relative_to(ROOT).with_suffix("")
        if path.name == "__init__.py":
            relative = relative.parent
            if shallow and relative != directory.relative_to(ROOT):
                continue
        names.append(".".join(relative.parts))
    return sorted(set(names), key=lambda name: (name != package, name))


def expand(markdown: str) -> str:
    """``markdown`` with both kinds of marker replaced by the generated text."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())

    def directives(match: re.Match[str]) -> str:
        return "\n".join(f"::: {name}\n" for name in api_modules(match.group(1), bool(match.group(2))))

    return API_MARKER.sub(directives, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: expand the markers of every page before it is rendered."""
    return expand(markdown)
