"""The fenced code blocks of the README and of the docs site, for the tests that run them.

A block may carry a marker on the last non-blank line before its fence::

    <!-- NAME: tests/PATH.py runs these lines -->

``NAME`` is how a test finds the block (:func:`block`) and ``tests/PATH.py``
the test file that runs or checks it; every block that is not a plain
``python`` example must carry one (``tests/docs/test_blocks.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

MARKER = re.compile(r"<!-- ([\w-]+): (tests/[\w/]+\.py)\b[^>]*-->")
FENCE = re.compile(r"^(\s*)(`{3,})([\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and text, and its marker if any."""

    path: Path
    ordinal: int  # 0-based, among the file's blocks
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None
    test_file: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page of the site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` in order (an indented fence's indentation is removed)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, lang = opening.groups()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        previous = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.fullmatch(previous)
        found.append(
            Block(
                path=path,
                ordinal=len(found),
                line=i + 1,
                lang=lang,
                text="\n".join(body) + "\n",
                marker=marker.group(1) if marker else None,
                test_file=marker.group(2) if marker else None,
            )
        )
        i = j + 1
    return found


def block(
    path: Path, marker: str | None = None, *, ordinal: int | None = None, lang: str | None = None
) -> Block:
    """The one block of ``path`` with this marker, or the ``ordinal``-th (among blocks of ``lang``)."""
    candidates = [b for b in blocks(path) if lang is None or b.lang == lang]
    if marker is not None:
        named = [b for b in candidates if b.marker == marker]
        assert len(named) == 1, f"{path}: {len(named)} blocks marked {marker!r}"
        return named[0]
    assert ordinal is not None, "give a marker or an ordinal"
    return candidates[ordinal]


def all_blocks() -> list[Block]:
    """Every block of every page (README first)."""
    return [b for page in pages() for b in blocks(page)]


def page_of(marker: str) -> Block:
    """The one block, on any page, that carries ``marker``."""
    named = [b for b in all_blocks() if b.marker == marker]
    assert len(named) == 1, f"{len(named)} blocks marked {marker!r}: {[b.where for b in named]}"
    return named[0]


def sections(text: str) -> list[list[str]]:
    """The command lines of a block, one list per ``# comment`` heading line."""
    found: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("# "):
            found.append([])
        elif line.strip():
            found[-1].append(line)
    return found
