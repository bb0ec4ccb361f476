"""The fast lane's markers (tests/conftest.py): every listed slow test still exists, the hook marks them.

Every :data:`SLOW_TESTS` entry must be the exact id of a collected test, its
parametrized id included (a renamed parameter used to leave a stale entry that
marked nothing): the slow test collects the files they name and compares.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MULTIPROCESS, SLOW_TESTS

ROOT = Path(__file__).resolve().parents[1]


def test_every_listed_slow_test_names_a_test_that_exists():
    for nodeid in SLOW_TESTS:
        path, name = nodeid.split("::", 1)
        source = ROOT / path
        assert source.is_file(), nodeid
        text = source.read_text()
        if path.startswith("tests/"):
            assert re.search(rf"^def {re.escape(name.split('[')[0])}\(", text, re.MULTILINE), nodeid
        else:  # a doctest: module.object
            assert name.rsplit(".", 1)[-1] in text and ">>>" in text, nodeid


def stale_slow_tests(collected: set[str]) -> list[str]:
    """The :data:`SLOW_TESTS` entries (parametrized ids and doctests included) not among ``collected``."""
    return sorted(nodeid for nodeid in SLOW_TESTS if nodeid not in collected)


def test_a_renamed_parametrized_case_is_reported_as_stale():
    collected = set(SLOW_TESTS)
    renamed = "tests/studies/test_smoke.py::test_study_smoke[scaling]"
    collected.discard(renamed)
    collected.add(renamed.replace("[scaling]", "[scaling-quick]"))
    assert stale_slow_tests(collected) == [renamed]


@pytest.mark.slow  # a pytest process collecting every file SLOW_TESTS names (about 7 s of CPU)
def test_every_listed_slow_test_is_a_collected_test_id():
    files = sorted({nodeid.split("::", 1)[0] for nodeid in SLOW_TESTS})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--co", *files],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = {line.strip() for line in done.stdout.splitlines() if "::" in line}
    assert not stale_slow_tests(collected), (
        f"SLOW_TESTS entries that match no collected test: {stale_slow_tests(collected)}"
    )


@pytest.mark.slow  # a pytest process collecting two files
def test_the_hook_marks_multiprocess_tests_processes_and_listed_tests_slow():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--co", "-m", "processes or slow",
         str(MULTIPROCESS / "test_hospital_walkthrough.py"), "tests/pppca/test_answer_check.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    selected = {line for line in done.stdout.splitlines() if "::" in line}
    assert (
        "tests/multiprocess/test_hospital_walkthrough.py::test_the_page_has_five_party_commands_with_one_port"
        in selected
    )
    assert "tests/pppca/test_answer_check.py::test_a_random_t_is_caught_with_reveal_components" in selected
    assert not any("test_answer_check" in s and s not in SLOW_TESTS for s in selected), selected
