"""The README: its Python examples run as written, and its links into docs/ lead somewhere."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
#: relative links of the README (not web addresses), without their #anchor
LINKS = sorted(
    {
        target.split("#")[0]
        for target in re.findall(r"\]\(([^)\s]+)\)", README)
        if not re.match(r"[a-z]+://", target) and not target.startswith("#")
    }
)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int) -> None:
    cwd = Path.cwd()
    os.chdir(ROOT)  # the examples use paths relative to the repository
    try:
        exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {})
    finally:
        os.chdir(cwd)


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2


def test_readme_keeps_the_ci_test_command() -> None:
    # .ci/run runs ./run.sh test: the README's "Two commands" block says so to a reader
    two = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert "./run.sh test    # set up .venv, then run ruff and the whole test suite" in two


def test_readme_is_short() -> None:
    # the rest lives in docs/ (issue 36): a README a person reads to the end
    assert README.count("\n") <= 300


def test_readme_links_to_docs() -> None:
    docs = [link for link in LINKS if link.startswith("docs/")]
    assert len(docs) >= 10  # the README sends readers to the docs pages


@pytest.mark.parametrize("link", LINKS)
def test_readme_link_exists(link: str) -> None:
    assert (ROOT / link).exists(), f"README.md links to {link}, which does not exist"
