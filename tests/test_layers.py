"""The import layers hold (import-linter's contracts in pyproject.toml), and the contracts
catch a break: each deliberate violation below makes ``lint-imports`` fail."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("layers")
    for package in ("mfgtx", "app"):
        shutil.copytree(ROOT / package, out / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", out / "pyproject.toml")
    return out


def test_the_contracts_hold_on_main(copy) -> None:
    done = _lint(copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("models/vit.py", "import mfgtx.artifacts", "mfgtx.models imports only mfgtx.nn"),
        ("nn/attention.py", "import mfgtx.data", "mfgtx.nn imports nothing else"),
        ("artifacts/bundle.py", "import mfgtx.models", "mfgtx.artifacts names no model"),
        ("data/windows.py", "import mfgtx.jobs", "layers only point down"),
        ("kinds/sensor.py", "import mfgtx.cli", "layers only point down"),
        ("split/splitter.py", "import mfgtx.train", "layers only point down"),  # siblings
        ("kinds/sensor.py", "import mfgtx.serving", "layers only point down"),
        ("serving/onnx.py", "import mfgtx.jobs", "layers only point down"),
        ("data/io.py", "import mfgtx.jobs", "layers only point down"),
        ("../app/views/score.py", "import mfgtx.jobs", "app does not import mfgtx.jobs"),
        ("../app/_tables.py", "from mfgtx.jobs import sinks", "app does not import mfgtx.jobs"),
        # _labels reads through mfgtx.jobfile: importing the jobs that write is no exception
        ("../app/_labels.py", "import mfgtx.jobs", "app does not import mfgtx.jobs"),
        # a job file is read below the jobs that run it, above what it names
        ("jobfile/config.py", "import mfgtx.jobs", "layers only point down"),
        ("jobfile/prepare.py", "from mfgtx.jobs import sinks", "layers only point down"),
        ("kinds/sensor.py", "import mfgtx.jobfile", "layers only point down"),
        ("nn/attention.py", "import mfgtx.jobfile", "mfgtx.nn imports nothing else"),
        # the engine runs tasks for the kinds and the jobs, below them all
        ("engine/_spec.py", "import mfgtx.kinds", "layers only point down"),
    ],
)
def test_a_deliberate_violation_breaks_its_contract(copy, module, line, contract) -> None:
    target = copy / "mfgtx" / module
    before = target.read_text()
    target.write_text(before + f"\n{line}  # a deliberate violation\n")
    try:
        done = _lint(copy)
    finally:
        target.write_text(before)
    assert done.returncode != 0, done.stdout
    assert f"{contract}" in done.stdout and "BROKEN" in done.stdout


PUBLIC = {
    "mfgtx", "mfgtx.alerts", "mfgtx.artifacts", "mfgtx.baselines", "mfgtx.calibration", "mfgtx.data",
    "mfgtx.data.io", "mfgtx.explain", "mfgtx.history", "mfgtx.images", "mfgtx.jobfile", "mfgtx.jobs",
    "mfgtx.kinds",
    "mfgtx.metrics",
    "mfgtx.passwords", "mfgtx.split",
}  # fmt: skip


def _mfgtx_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mfgtx"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("mfgtx")}
    return found


def test_the_dashboard_imports_only_public_library_api() -> None:
    used = {p.relative_to(ROOT).as_posix(): _mfgtx_imports(p) for p in (ROOT / "app").rglob("*.py")}
    private = {f: sorted(m - PUBLIC) for f, m in used.items() if m - PUBLIC}
    assert not private, private
    assert any(used.values())  # the check reads the app (it would pass on an empty folder)
