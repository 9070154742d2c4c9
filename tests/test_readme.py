"""The Python examples in README.md run as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


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
