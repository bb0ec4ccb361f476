"""tools/check_limits.py: each house limit fails on a planted case and holds just inside it.

The script runs as CI runs it, a subprocess from the repository root, over a
tree planted in ``tmp_path``: a file over the line limit, a function of rank E
(built from a run of ``if`` statements), a rank D function with and without
its ``# complexity:`` comment. The last test runs it on the real source tree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "radon", reason="tools/check_limits.py needs radon (the lint extra: pip install -e '.[lint]')"
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check_limits.py"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python tools/check_limits.py ARGS`` from the repository root."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def branchy(name: str, branches: int, comment_above: str = "", comment_inside: str = "") -> str:
    """A function of complexity ``branches + 1``: one ``if`` per branch, optional comment lines."""
    body = "".join(f"    if x == {i}:\n        x += {i}\n" for i in range(branches))
    return f"{comment_above}def {name}(x: int) -> int:\n{comment_inside}{body}    return x\n"


def plant(tmp_path: Path, source: str, name: str = "planted.py") -> Path:
    package = tmp_path / "pkg"
    package.mkdir(exist_ok=True)
    path = package / name
    path.write_text(source)
    return path


def test_a_file_of_501_lines_fails_naming_the_file_and_the_limit(tmp_path):
    path = plant(tmp_path, "x = 0\n" * 501)
    done = run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"{path}: 501 lines; limit: 500 lines per file"]


def test_a_file_of_500_lines_passes_and_the_summary_names_it(tmp_path):
    path = plant(tmp_path, "x = 0\n" * 496 + branchy("small", 1))  # the function has 4 lines
    plant(tmp_path, "", "empty.py")
    done = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("\n") == 1
    assert "2 files checked" in done.stdout
    assert f"largest {path} (500 lines, limit 500)" in done.stdout


def test_max_lines_lowers_the_limit(tmp_path):
    path = plant(tmp_path, "x = 0\n" * 11)
    assert run(tmp_path, "--max-lines", "11").returncode == 0
    done = run(tmp_path, "--max-lines", "10")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [f"{path}: 11 lines; limit: 10 lines per file"]


@pytest.mark.parametrize("comment", ["", "# complexity: a planted case\n"])
def test_a_rank_e_function_fails_even_with_a_comment(tmp_path, comment):
    path = plant(tmp_path, "import os\n\n\n" + branchy("tangled", 30, comment_above=comment))
    done = run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stdout.splitlines()
    def_line = 4 + comment.count("\n")
    assert line.startswith(f"{path}:{def_line}: tangled has rank E (31)")
    assert line.endswith("limit: rank D (30) at most")


def test_a_rank_d_function_without_a_comment_fails_and_rank_c_passes(tmp_path):
    path = plant(tmp_path, branchy("knotty", 20) + "\n\n" + branchy("plain", 19))
    done = run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{path}:1: knotty has rank D (21) and no '# complexity: <reason>' comment")
    assert line.endswith("limit: rank C (20) unless the comment says why")


def test_a_rank_d_method_is_named_with_its_class(tmp_path):
    method = "".join(f"    {line}\n" if line else "\n" for line in branchy("check", 24).splitlines())
    path = plant(tmp_path, f"class Options:\n{method}")
    done = run(tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith(f"{path}:2: Options.check has rank D (25)")


@pytest.mark.parametrize(
    "source",
    [
        branchy("knotty", 25, comment_above="# complexity: one branch per planted case\n"),
        branchy("knotty", 25, comment_inside="    # complexity: one branch per planted case\n"),
        "import functools\n\n\n# complexity: above the decorator\n@functools.cache\n" + branchy("knotty", 25),
        branchy("knotty", 25).replace(
            "(x: int) -> int:", "(\n    x: int,\n) -> int:\n    # complexity: why", 1
        ),
    ],
    ids=["above-def", "first-body-line", "above-decorator", "after-a-long-signature"],
)
def test_a_rank_d_function_with_its_complexity_comment_passes(tmp_path, source):
    plant(tmp_path, source)
    done = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "worst function" in done.stdout and "knotty rank D (26)" in done.stdout


@pytest.mark.parametrize(
    "source",
    [
        branchy("knotty", 25, comment_above="# complexity:\n"),  # no reason
        branchy("knotty", 25, comment_above="# complexity: too far above\n\n"),
        branchy("knotty", 25, comment_inside='    """Doc."""\n    # complexity: after the docstring\n'),
        branchy("knotty", 25, comment_above="# why: planted\n"),
    ],
    ids=["no-reason", "blank-line-between", "after-the-docstring", "other-wording"],
)
def test_a_comment_elsewhere_or_without_a_reason_does_not_count(tmp_path, source):
    plant(tmp_path, source)
    done = run(tmp_path)
    assert done.returncode == 1
    assert "knotty has rank D (26) and no '# complexity: <reason>' comment" in done.stdout


def test_every_offence_is_listed_one_line_each(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    big = plant(tmp_path, "x = 0\n" * 600 + branchy("tangled", 45), "big.py")
    plant(tmp_path, branchy("knotty", 22), "sub/knotty.py")
    done = run(tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"{big}: 6")
    assert lines[1].startswith(f"{big}:601: tangled has rank F (46)")
    assert "knotty.py:1: knotty has rank D (23)" in lines[2]
    assert "3 offences in 2 files" in done.stderr


def test_a_missing_path_is_a_usage_error(tmp_path):
    done = run(tmp_path / "nowhere")
    assert done.returncode == 2
    assert "no such file or directory" in done.stderr


@pytest.mark.slow  # radon over every source file (about 2 s of CPU)
def test_the_source_tree_keeps_the_limits():
    done = run()
    assert done.returncode == 0, f"tools/check_limits.py found offences:\n{done.stdout}{done.stderr}"
    assert "files checked, all within the limits" in done.stdout


def test_ci_runs_it_right_after_lint_imports_and_the_lint_extra_brings_radon():
    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci[ci.index("lint-imports") + 1] == "python tools/check_limits.py"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"radon>=6"' in next(line for line in pyproject.splitlines() if line.startswith("lint = ["))
