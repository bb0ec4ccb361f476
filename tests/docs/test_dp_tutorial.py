"""The DP tutorial's command lines run, print what the page shows, and clip no row (issue 38).

``docs/tutorials/dp-pca.md`` shows two ``mpc-pca run`` commands, each
followed by the output it prints. Each command runs here in an empty
directory; its stdout and its ``mpc-pca:`` lines on stderr (warnings, notes)
must be the page's lines, with only what cannot repeat masked: the
milliseconds of the traffic table, and for the unseeded run the noisy
variances and ``q/q_o``. No run may print a clipping warning, and the JSON
says what the page says about ``private``. Of the progress lines, the page
shows the first (what starts, written at once; its seconds masked): how many
phase lines follow depends on the machine's speed. Log lines are not part of
the comparison.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from tests.docs.test_blocks import run_shell
from tests.helpers.markdown_blocks import DOCS, blocks, page_of

PAGE = DOCS / "tutorials" / "dp-pca.md"
MILLISECONDS = re.compile(r"\d+(?:\.\d+)? ms$")
PROGRESS = "mpc-pca: progress: "
SECONDS = re.compile(r"^mpc-pca: progress: \d+\.\d s: ")
NOISY = re.compile(r"^(  component \d+: variance |captured energy q/q_o on the pooled rows: )\S+$")


def _masked(lines: list[str], seeded: bool) -> list[str]:
    out = []
    for line in lines:
        line = MILLISECONDS.sub("<ms> ms", line.rstrip())
        if not seeded:
            line = NOISY.sub(r"\1<noise>", line)
        out.append(line)
    return out


def _printed(marker: str, tmp_path: Path) -> tuple[list[str], list[str], Path]:
    """Run the block marked ``marker``; its stdout lines, its ``mpc-pca:`` stderr lines, its directory."""
    done = run_shell(page_of(marker).text, tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines() if line.startswith("mpc-pca:")]
    return done.stdout.splitlines(), ours, tmp_path / "work"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("marker", "shown_marker", "seeded", "private"),
    [
        ("dp-cli-seeded", "dp-cli-seeded-output", True, False),
        ("dp-cli-capepca", "dp-cli-capepca-output", False, True),
    ],
)
def test_the_tutorial_cli_runs_print_what_the_page_shows_and_clip_nothing(
    marker, shown_marker, seeded, private, tmp_path
):
    stdout, printed, work = _printed(marker, tmp_path)
    shown = page_of(shown_marker).text.strip().splitlines()
    progress = [SECONDS.sub(PROGRESS, line) for line in printed if line.startswith(PROGRESS)]
    shown_progress = [SECONDS.sub(PROGRESS, line) for line in shown if line.startswith(PROGRESS)]
    assert progress[:1] == shown_progress  # the page shows the first line; the phases depend on speed
    stderr = [line for line in printed if not line.startswith(PROGRESS)]
    shown_stderr = [line for line in shown if line.startswith("mpc-pca:") and not line.startswith(PROGRESS)]
    shown_stdout = [line for line in shown if not line.startswith("mpc-pca:")]
    assert stderr == shown_stderr
    assert _masked(stdout, seeded) == _masked(shown_stdout, seeded)
    assert not any("clipped" in line for line in stdout + stderr), stderr
    output = re.search(r"--output (\S+)", page_of(marker).text).group(1)
    result = json.loads((work / output).read_text())
    assert result["private"] is private and result["row_bound"] == 128.0
    assert bool(result["privacy_leaks"]) is not private
    if not private:
        assert result["privacy_leaks"][0].startswith("a fixed noise seed (3) makes the DP noise reproducible")


def test_the_masking_still_compares_the_rest():
    """The mask hides only the noisy numbers: another row count or byte count is still a difference."""
    shown = page_of("dp-cli-capepca-output").text.strip().splitlines()
    changed = [line.replace("360, 360", "361, 359") for line in shown]
    assert _masked(changed, seeded=False) != _masked(shown, seeded=False)
    noisy = [re.sub(r"variance \S+", "variance 9.9", line) for line in shown]
    assert _masked(noisy, seeded=False) == _masked(shown, seeded=False)
    assert _masked(noisy, seeded=True) != _masked(shown, seeded=True)


def test_the_digits_bound_is_public_and_holds():
    """128 = 16 sqrt(64): the digits' 64 pixels count 0..16 (their format), so every row fits, with room."""
    from sklearn.datasets import load_digits

    X = load_digits().data
    assert X.shape[1] == 64 and X.min() >= 0 and X.max() <= 16
    norms = np.linalg.norm(X / 128, axis=1)
    assert norms.max() <= 1 and round(float(norms.max()), 1) == 0.6  # "these rows reach only 0.6"


def test_the_budget_output_is_what_the_accountant_block_prints():
    """The zCDP accountant's 1.164 after one (1.0, 1e-6) run, and the figures around it, as the page shows."""
    example = next(b for b in blocks(PAGE) if b.lang == "python" and "PPPCADP(" in b.text)
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(compile(example.text, example.where, "exec"), {"__name__": "__doc_block__"})
    assert printed.getvalue().strip() == page_of("dp-budget-output").text.strip()
