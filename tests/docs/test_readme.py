"""The README: at most 8 KB, its set-up commands, its three commands, and links that resolve.

The set-up commands are what a newcomer copies and what CI runs (``.ci/run``
runs the main job and the README's test command), so they are checked here
word for word.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from tests.docs.test_blocks import run_shell
from tests.helpers.markdown_blocks import README, ROOT, block, pages

README_LIMIT = 8192
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
#: A section named in prose rather than linked: "the README's *Set up and run*" (the docs site cannot link
#: the README, which is outside it); issue 38: "the README's *Enrolment* section" named none.
PROSE_SECTION = re.compile(r"\b(README|[\w./-]+\.md)'s\s+\*([^*]+)\*")


def test_readme_is_at_most_8_kb():
    size = README.stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes (limit {README_LIMIT}); move detail to docs/"


def _install() -> str:
    return block(README, "readme-install").text.strip()


def _tests() -> str:
    return block(README, "readme-tests").text.strip()


def _fast_lane() -> str:
    return block(README, "readme-fast-lane").text.strip()


def _torch() -> str:
    return block(README, "readme-torch").text.strip()


def test_readme_has_exactly_the_two_setup_commands():
    """Install + main job, then tests, each one line; the fast lane beside the tests as their variant
    (no install of its own); torch/CrypTen is a third, optional set-up line."""
    text = README.read_text()
    setup = text[text.index("## Set up and run\n") :]
    setup = setup[: setup.index("\n## ", 1)]
    assert re.findall(r"```bash\n(.*?)```", setup, flags=re.S) == [
        _install() + "\n",
        _tests() + "\n",
        _fast_lane() + "\n",
        _torch() + "\n",
    ]
    install, tests, optional = _install(), _tests(), _torch()
    assert "\n" not in install and "\n" not in tests and "\n" not in optional
    assert install.startswith("pip install -e . && mpc-pca run --protocol pppca-ss ")
    assert "torch" not in install and "[" not in install  # the base install: no extra, no torch
    assert tests == 'pip install -e ".[test]" && pytest -q'
    assert "Optional: torch and CrypTen" in setup.split(optional)[0].split(tests)[1]


def test_readme_torch_line_installs_the_pinned_cpu_build_first():
    pin = re.search(r'^torch = \["(torch==[^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert _torch().split(" && ") == [
        f"pip install {pin} --index-url https://download.pytorch.org/whl/cpu",
        'pip install -e ".[torch]"',
        "pip install --no-deps crypten==0.4.1",
    ]


def test_readme_shows_the_full_suite_and_the_fast_lane_with_their_times():
    """Both test commands, side by side, each with its measured time; the fast lane is the whole suite minus markers."""
    text = README.read_text()
    tests, fast = _tests(), _fast_lane()
    full = tests.split(" && ", 1)[1]
    assert fast == f'{full} -m "not slow and not processes"', fast  # the README's command, narrowed
    between = text[text.index(tests) : text.index(fast)]
    assert "```bash" in between and between.count("```bash") == 1  # right beside: no other block between
    before_full = text[: text.index(tests)].rsplit("```", 2)[-2]  # from the install block's end
    before_fast = between.rsplit("```", 1)[0]
    for what, prose in (("full suite", before_full), ("fast lane", before_fast)):
        assert re.search(r"\d+ min \d+ s measured", prose), f"README gives no measured time of the {what}"
    assert "CI runs" in before_full
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert 'pytest -m "not slow and not processes"' in contributing or fast in contributing


def test_ci_runs_the_readme_main_job_and_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    main_job = _install().split(" && ", 1)[1]
    assert re.search(rf"^{re.escape(main_job)}$", ci, re.M), "CI does not run the README's main job"
    test_command = _tests().split(" && ", 1)[1]
    assert re.search(rf"^(\S+=\S+ )*{re.escape(test_command)}$", ci, re.M), (
        "CI does not run the README's tests"
    )
    assert "not slow" not in ci, "CI must run the whole suite, not the fast lane"


def test_the_site_home_repeats_the_readme_setup_commands():
    home = block(ROOT / "docs" / "index.md", "readme-setup").text.strip().splitlines()
    assert home == [_install(), _tests()]


@pytest.mark.slow
def test_readme_three_commands_run(tmp_path):
    flows = block(README, "readme-flows").text
    assert len(flows.strip().splitlines()) == 3
    done = run_shell(flows, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "work" / "result.json").is_file()


def slug(heading: str) -> str:
    """The anchor MkDocs' ``toc`` extension gives a heading (its default slugify)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(re.sub(r"[`*]", "", h)) for h in re.findall(r"^#{1,6} (.+?)\s*$", text, flags=re.M)}


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    links = [a or b for a, b in LINK.findall(text)]
    return [link for link in links if not re.match(r"^[a-z][\w+.-]*:", link)]


def test_every_relative_link_resolves():
    broken = []
    checked = 0
    for page in pages():
        for link in relative_links(page):
            checked += 1
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert checked > 50, checked
    assert not broken, "\n".join(broken)


def prose_sections(page: Path) -> list[tuple[str, str]]:
    """The (page, heading) pairs ``page`` names in prose, outside code blocks and code spans."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return PROSE_SECTION.findall(text)


def test_every_section_named_in_prose_exists():
    """The link check above reads Markdown links only; a section named in words is checked here."""
    missing = []
    for page in pages():
        for target, heading in prose_sections(page):
            path = README if target == "README" else (page.parent / target).resolve()
            if not path.exists() or slug(heading) not in anchors(path):
                missing.append(f"{page.relative_to(ROOT)}: {target}'s *{heading}* (no such section)")
    assert not missing, "\n".join(missing)


def test_the_prose_section_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nsee the README's *Enrolment* section and page.md's *Title*\n")
    assert prose_sections(page) == [("README", "Enrolment"), ("page.md", "Title")]
    assert slug("Enrolment") not in anchors(README)
    assert slug("Set up and run") in anchors(README)


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [no anchor](page.md#nowhere)\n")
    assert relative_links(page) == ["#title", "missing.md", "page.md#nowhere"]
    assert "title" in anchors(page) and "nowhere" not in anchors(page)
    assert not (tmp_path / "missing.md").exists()
