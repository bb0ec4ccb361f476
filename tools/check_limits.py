"""Check the house limits on file size and complexity (``.ci/run`` runs it after ``lint-imports``).

Every ``.py`` file under the given paths (default: the source packages
``protocols/``, ``mpc_pca/``, ``benchmarks/`` and ``tools/``) is checked:

- **File size**: at most ``--max-lines`` lines (default 500).
- **Complexity**: no function or method has a cyclomatic complexity of rank E
  or worse (a score of 31 or more), as radon ranks it (``radon cc``). Nested
  functions and the methods of nested classes count on their own, as
  ``radon cc --show-closures`` lists them; classes themselves are not ranked.
- **Rank D needs a reason**: a function or method of rank D (a score of 21 to
  30) must carry a comment saying why it is not split. The convention is one
  comment line ``# complexity: <reason>`` (a non-empty reason) either on the
  line directly above the ``def`` (or above its first decorator) or as the
  first line of its body, the line right after the signature::

      # complexity: one branch per message kind of the wire format
      def decode(frame: bytes) -> Message:
          ...

      def decode(frame: bytes) -> Message:
          # complexity: one branch per message kind of the wire format
          ...

Run it locally from the repository root (radon comes with the ``lint`` extra,
``pip install -e ".[lint]"``)::

    python tools/check_limits.py                  # the four source packages
    python tools/check_limits.py protocols/runtime --max-lines 400

Exit status 0 with a one-line summary (files checked, the largest file, the
worst function and its rank) when every limit holds; exit status 1 with one
line per offence (``path:line: what``, naming the limit) otherwise.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_rank, cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).resolve().parents[1]
#: The source packages checked when no path is given (relative to the repository root).
DEFAULT_PATHS = ("protocols", "mpc_pca", "benchmarks", "tools")
MAX_LINES = 500
#: Lowest score of rank D (needs a ``# complexity:`` comment) and of rank E (fails).
RANK_D_SCORE = 21
RANK_E_SCORE = 31
REASON = re.compile(r"^\s*#\s*complexity:\s*\S")


@dataclass(frozen=True)
class Block:
    """One ranked function or method: where it is, its dotted name and its radon score."""

    path: Path
    lineno: int
    name: str
    score: int

    @property
    def rank(self) -> str:
        """Radon's letter for :attr:`score` (A best, F worst)."""
        return str(cc_rank(self.score))


def source_files(paths: Iterable[Path]) -> list[Path]:
    """The ``.py`` files of ``paths`` (files as given, directories walked), sorted, without duplicates.

    Hidden directories and ``__pycache__`` are skipped.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_file():
            found.add(path)
            continue
        for file in path.rglob("*.py"):
            parts = file.relative_to(path).parts
            if not any(part.startswith(".") or part == "__pycache__" for part in parts):
                found.add(file)
    return sorted(found)


def count_lines(text: str) -> int:
    """Lines of ``text`` as ``wc -l`` counts them, plus a last line without its newline."""
    return text.count("\n") + (bool(text) and not text.endswith("\n"))


def _functions(blocks: Iterable[Function | Class], prefix: str = "") -> Iterator[tuple[str, Function]]:
    """``(dotted name, function)`` of every function, method and nested function in ``blocks``."""
    for block in blocks:
        if isinstance(block, Class):
            yield from _functions([*block.methods, *block.inner_classes], f"{prefix}{block.name}.")
        else:
            name = f"{prefix}{block.name}"
            yield name, block
            yield from _functions(block.closures, f"{name}.")


def ranked_blocks(path: Path, source: str) -> list[Block]:
    """Every function and method of ``source`` (the text of ``path``) with its radon score."""
    top = [block for block in cc_visit(source) if not getattr(block, "is_method", False)]
    blocks = [Block(path, func.lineno, name, func.complexity) for name, func in _functions(top)]
    return sorted(blocks, key=lambda block: block.lineno)


def _defs(tree: ast.AST) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The function definitions of ``tree`` by the line of their ``def``."""
    return {
        node.lineno: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def has_reason(lines: Sequence[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a ``# complexity: <reason>`` line stands above ``node`` or opens its body.

    Above: the line directly above the ``def`` or above its first decorator.
    Body: the first line after the signature, which ends on the last line
    before the first statement that is neither blank nor a comment.
    """
    above = [node.lineno - 1, *(decorator.lineno - 1 for decorator in node.decorator_list[:1])]
    # Line numbers are 1-based: line i is lines[i - 1]. Only blank and comment lines can stand
    # between the signature's last line and the first statement.
    header_end = node.body[0].lineno - 1
    while header_end > node.lineno and (
        not lines[header_end - 1].strip() or lines[header_end - 1].lstrip().startswith("#")
    ):
        header_end -= 1
    candidates = {*above, header_end + 1}
    return any(1 <= line <= len(lines) and REASON.match(lines[line - 1]) for line in candidates)


def check_file(path: Path, max_lines: int, shown: str) -> tuple[int, list[Block], list[str]]:
    """Line count, ranked functions and offences (one line each) of one source file.

    ``shown`` is how the offences name the file.
    """
    source = path.read_text(encoding="utf-8")
    offences = []
    lines = count_lines(source)
    if lines > max_lines:
        offences.append(f"{shown}: {lines} lines; limit: {max_lines} lines per file")
    try:
        blocks = ranked_blocks(path, source)
        defs = _defs(ast.parse(source, filename=str(path)))
    except SyntaxError as exc:
        return lines, [], [*offences, f"{shown}:{exc.lineno}: cannot parse: {exc.msg}"]
    text_lines = re.split(r"\r\n?|\n", source)  # the line ends the parser knows (no form feeds)
    for block in blocks:
        where = f"{shown}:{block.lineno}: {block.name} has rank {block.rank} ({block.score})"
        if block.score >= RANK_E_SCORE:
            offences.append(f"{where}; limit: rank D ({RANK_E_SCORE - 1}) at most")
        elif block.score >= RANK_D_SCORE and not has_reason(text_lines, defs[block.lineno]):
            offences.append(
                f"{where} and no '# complexity: <reason>' comment; "
                f"limit: rank C ({RANK_D_SCORE - 1}) unless the comment says why"
            )
    return lines, blocks, offences


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Check the files, print the offences (or the summary) and return the exit status."""
    parser = argparse.ArgumentParser(
        description="Fail on files over the line limit, functions of rank E or worse and "
        "rank D functions without a '# complexity: <reason>' comment."
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help=f"files or directories to check (default: {' '.join(DEFAULT_PATHS)} of the repository)",
    )
    parser.add_argument(
        "--max-lines", type=int, default=MAX_LINES, help=f"most lines per file (default {MAX_LINES})"
    )
    args = parser.parse_args(argv)
    paths: list[Path] = args.paths or [ROOT / name for name in DEFAULT_PATHS]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    files = source_files(paths)
    sizes: dict[str, int] = {}
    blocks: list[tuple[str, Block]] = []
    offences: list[str] = []
    for file in files:
        shown = _shown(file)
        sizes[shown], found, problems = check_file(file, args.max_lines, shown)
        blocks.extend((shown, block) for block in found)
        offences.extend(problems)
    if offences:
        print("\n".join(offences))
        print(f"check_limits: {len(offences)} offences in {len(files)} files", file=sys.stderr)
        return 1
    summary = f"check_limits: {len(files)} files checked, all within the limits"
    if sizes:
        largest = max(sizes, key=lambda shown: (sizes[shown], shown))
        summary += f"; largest {largest} ({sizes[largest]} lines, limit {args.max_lines})"
    if blocks:
        shown, worst = max(blocks, key=lambda item: item[1].score)
        summary += f"; worst function {shown}:{worst.lineno} {worst.name} rank {worst.rank} ({worst.score})"
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
