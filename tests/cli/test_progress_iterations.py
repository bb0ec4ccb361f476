"""Progress of iterative phases, and of parties run as child processes (issue 25).

A fake clock and a ``StringIO`` stand in for time and the terminal: no test
here measures or waits for wall-clock time.
"""

from __future__ import annotations

import io
import logging
import sys

import numpy as np
import pytest

from mpc_pca.cli.progress import BAR_WIDTH, PhaseProgress, phase_progress
from mpc_pca.deploy.phase_lines import MAX_LABEL, forward_phases, phase_line, relog
from mpc_pca.pppca import PPPCA
from protocols.party import ITERATION, PHASE_STARTED
from protocols.runtime.launcher import FORWARD_PREFIX, ProcessOutcome, launch

PROTOCOL = "mpc_pca.protocol"


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_shows_the_iterations_of_the_running_phase_as_a_bar():
    clock, out = Clock(), io.StringIO()
    progress = PhaseProgress(out, tty=True, quiet_seconds=3.0, clock=clock)
    progress.started("eigensolve on shares")
    progress.iteration("subspace iteration", 1, 8)
    assert out.getvalue() == ""  # still within the quiet time
    clock.now += 3.0
    progress.iteration("subspace iteration", 2, 8)
    clock.now += 1.0
    progress.iteration("subspace iteration", 8, 8)
    progress.started("projection")  # a new phase has no bar
    progress.finish()
    quarter = "#" * (BAR_WIDTH // 4) + "-" * (BAR_WIDTH - BAR_WIDTH // 4)
    assert out.getvalue() == (
        f"\r\x1b[Kmpc-pca:   3.0 s: eigensolve on shares [{quarter}] 2/8"
        f"\r\x1b[Kmpc-pca:   4.0 s: eigensolve on shares [{'#' * BAR_WIDTH}] 8/8"
        "\r\x1b[Kmpc-pca:   4.0 s: projection\n"
    )


def test_a_log_file_gets_one_line_per_phase_and_none_per_iteration():
    clock, out = Clock(), io.StringIO()
    progress = PhaseProgress(out, tty=False, quiet_seconds=0.0, clock=clock)
    progress.started("eigensolve on shares")
    for done in range(1, 6):
        progress.iteration("ladder iteration", done, 5)
        progress.tick()
    assert out.getvalue() == "mpc-pca: progress: 0.0 s: eigensolve on shares\n"


@pytest.mark.parametrize(("done", "total"), [(3, 2), (-1, 4), (1, 0)])
def test_a_count_that_cannot_be_drawn_is_ignored(done, total):
    clock, out = Clock(), io.StringIO()
    progress = PhaseProgress(out, tty=True, quiet_seconds=0.0, clock=clock)
    progress.started("eigensolve on shares")
    progress.iteration("subspace iteration", done, total)
    assert out.getvalue().endswith("eigensolve on shares")  # no bar after the label


def test_the_secure_eigensolver_reports_its_iterations_to_the_bar(wine):
    out = io.StringIO()
    with phase_progress(stream=out, tty=True, quiet_seconds=0.0):
        PPPCA(2, reveal="components", eigengap=0.3).fit(np.array_split(wine, 2))
    counts = [chunk.rsplit("] ", 1)[1] for chunk in out.getvalue().split("\r") if "] " in chunk]
    assert counts, out.getvalue()
    done, total = map(int, counts[-1].split("/"))
    assert 1 <= done == total  # the last step is reported, as the last of the loop
    assert logging.getLogger(PROTOCOL).filters == []


def record(msg: str, *args: object, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord(PROTOCOL, level, __file__, 0, msg, args, None)


def test_a_child_writes_its_phases_and_iterations_as_lines_and_the_parent_reads_them_back():
    child = io.StringIO()
    logger = logging.getLogger(PROTOCOL)
    level = logger.level
    forward = forward_phases(child)
    try:
        logger.info(PHASE_STARTED, "provider0", "mean\tsecure sum")
        logger.debug(ITERATION, "provider0", "ladder iteration", 2, 9)
        logger.info("%s: %s done in %.2f s", "provider0", "mean secure sum", 0.5)  # not forwarded
    finally:
        logger.removeFilter(forward)
        logger.setLevel(level)
    lines = child.getvalue().splitlines()
    assert lines == [
        f"{FORWARD_PREFIX}phase\tmean secure sum",
        f"{FORWARD_PREFIX}iteration\tladder iteration\t2\t9",
    ]
    parent = io.StringIO()
    with phase_progress(stream=parent, tty=True, quiet_seconds=0.0):
        for line in lines:
            assert relog("provider1", line[len(FORWARD_PREFIX) :])
    assert "mean secure sum [" in parent.getvalue() and "] 2/9" in parent.getvalue()


@pytest.mark.parametrize(
    "line",
    ["phase", "phase\ta\tb", "iteration\tx\t1", "iteration\tx\tone\t2", "import os", "", "phase\x00"],
)
def test_lines_that_do_not_parse_are_ignored(line, caplog):
    with caplog.at_level(logging.DEBUG, logger=PROTOCOL):
        assert not relog("provider0", line)
    assert caplog.records == []


def test_forwarded_labels_stay_on_one_line_and_bounded():
    line = phase_line(record(PHASE_STARTED, "server", "a\nb\t" + "x" * 1000))
    assert line is not None and "\n" not in line and line.count("\t") == 2
    assert len(line.split("\t")[2]) == MAX_LABEL
    assert phase_line(record("%s: %s done in %.2f s", "server", "a", 1.0)) is None


def test_forwarded_lines_are_never_taken_for_the_partys_error():
    stderr = f"Traceback ...\nValueError: boom\n{FORWARD_PREFIX}phase\tprojection\n"
    outcome = ProcessOutcome("provider0", 1, stderr, 1.0)
    assert outcome.error_line() == "exited with status 1: ValueError: boom"


def test_the_launcher_hands_each_childs_forwarded_lines_to_on_line(tmp_path):
    script = (
        "import sys\n"
        f"sys.stderr.write({FORWARD_PREFIX!r} + 'phase\\tone\\n'); sys.stderr.flush()\n"
        "sys.stderr.write('an ordinary log line\\n')\n"
        f"sys.stderr.write({FORWARD_PREFIX!r} + 'iteration\\tloop\\t1\\t2')\n"  # no newline: the last line
    )
    seen: list[tuple[str, str]] = []
    outcomes = launch(
        {"a": [sys.executable, "-c", script], "b": [sys.executable, "-c", "pass"]},
        timeout=60,
        workdir=tmp_path,
        on_line=lambda party, line: seen.append((party, line)),
    )
    assert all(o.ok for o in outcomes.values()), outcomes
    assert seen == [("a", "phase\tone")]  # a line is handed on once complete, never a partial one
