"""``./run.sh`` on a first set-up shows pip's progress; an update stays quiet.

``run.sh`` is copied into a temporary folder with a stand-in ``.venv/bin/python`` that only
records how it was called, so nothing is installed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copy(ROOT / "run.sh", tmp_path / "run.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "constraints.txt").write_text("torch==2.13.0\n")
    calls = tmp_path / "calls.txt"
    stub = tmp_path / ".venv" / "bin" / "python"
    stub.parent.mkdir(parents=True)
    stub.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    return tmp_path, calls


def _run(project: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", "run.sh", "bench"], cwd=project, env=env, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip


def test_first_set_up_shows_pips_progress_and_an_update_is_quiet(tmp_path) -> None:
    project, calls = _project(tmp_path)
    first = _run(project)
    pip = [line for line in calls.read_text().splitlines() if line.startswith("-m pip install")]
    assert len(pip) == 1 and "--progress-bar on" in pip[0] and "--quiet" not in pip[0], pip
    assert "first set-up" in first.stderr and "a few minutes" in first.stderr, first.stderr
    _run(project)  # nothing changed: no install at all
    assert len([ln for ln in calls.read_text().splitlines() if "pip install" in ln]) == 1
    (project / "constraints.txt").write_text("torch==2.13.0\npandas==2.3.3\n")
    again = _run(project)
    pip = [line for line in calls.read_text().splitlines() if line.startswith("-m pip install")]
    assert len(pip) == 2 and "--quiet" in pip[1], pip
    assert "updating" in again.stderr


def test_the_test_task_runs_mypy_and_docs_between_import_contracts_and_pytest(tmp_path) -> None:
    project, calls = _project(tmp_path)
    for tool in ("ruff", "lint-imports", "mypy", "mkdocs"):
        stub = project / ".venv" / "bin" / tool
        stub.write_text(f'#!/bin/sh\necho "{tool} $@" >> {calls}\n')
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run(
        ["bash", "run.sh", "test", "-q"], cwd=project, env=env, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    steps = [ln for ln in calls.read_text().splitlines() if "pip install" not in ln]
    steps = [ln.rsplit(" ", 1)[0] if ln.startswith("mkdocs") else ln for ln in steps]  # tmp dir
    assert steps == [
        "ruff check .",
        "ruff format --check .",
        "lint-imports --no-cache",
        "mypy ",
        "mkdocs build --strict --site-dir",
        "-m pytest -q",
    ], steps
