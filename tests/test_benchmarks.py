"""The benchmarks cannot rot unseen: each one parses its flags (the harness's and its own),
imports only mfgtx's public names, and the harness's result file renders as the docs' tables.

Nothing here measures anything: ``--help`` stops every script before its work, and the
result file is a made-up one.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(
    p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_") and p.stem != "tables"
)


def _module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``benchmarks/<name>.py`` imported as a script sees it (its folder on ``sys.path``)."""
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_is_found() -> None:
    assert len(SCRIPTS) >= 17 and "attention" in SCRIPTS and "tile_memory" in SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_lists_the_shared_flags(name, monkeypatch, capsys) -> None:
    module = _module(name, monkeypatch)
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert f"benchmarks/{name}.py" in text
    for flag in ("--threads", "--seed"):
        assert flag in text, f"{name}: {flag} missing"
    assert "--out" in text or "--results" in text


def test_tile_memory_keeps_the_flags_the_docs_give(monkeypatch, capsys) -> None:
    """``--out`` stays its working folder; the result file goes to ``--results``."""
    with pytest.raises(SystemExit):
        _module("tile_memory", monkeypatch).main(["--help"])
    text = capsys.readouterr().out
    for flag in ("--whole", "--batch-size", "--photos", "--out", "--results"):
        assert flag in text


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_private_mfgtx_import(name) -> None:
    tree = ast.parse((BENCH / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for module in names:
            parts = module.split(".")
            assert parts[0] != "mfgtx" or not any(p.startswith("_") for p in parts), (
                f"benchmarks/{name}.py imports the private {module}"
            )


def _harness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    import _harness

    return _harness


def _fake_run(harness: ModuleType, results: Path) -> Path:
    p = harness.parser("fake_bench", "A benchmark that measures nothing.")
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args(["--out", str(results), "--seed", "7", "--steps", "5"])
    run = harness.start("fake_bench", args)
    run.row("step", {"model": "ours", "median step": 0.125}, units={"median step": "s"})
    run.row("step", {"model": "peer | theirs", "median step": float("nan")})
    run.note("ours / peer: not measured")
    return run.write()


def test_harness_writes_one_result_file(tmp_path, monkeypatch) -> None:
    path = _fake_run(_harness(monkeypatch), tmp_path)
    assert path.parent == tmp_path and path.name.startswith("fake_bench-")
    result = json.loads(path.read_text())
    assert result["bench"] == "fake_bench" and result["format"] == 1
    assert result["args"] == {"threads": None, "seed": 7, "steps": 5}
    env = result["environment"]
    assert {"python", "cpu", "cpu_count", "commit", "torch", "torch_threads"} <= set(env)
    step = result["tables"]["step"]
    assert step["columns"] == ["model", "median step"] and step["units"] == {"median step": "s"}
    assert step["rows"][0]["median step"] == 0.125
    assert step["rows"][1]["median step"] is None  # NaN is not JSON
    assert result["notes"] == ["ours / peer: not measured"]


def test_tables_renders_the_latest_run_of_each(tmp_path, monkeypatch) -> None:
    harness = _harness(monkeypatch)
    older = _fake_run(harness, tmp_path)
    stale = json.loads(older.read_text())
    stale["started"] = "2000-01-01T00:00:00+00:00"
    stale["tables"]["step"]["rows"][0]["median step"] = 99.0
    older.write_text(json.dumps(stale))
    _fake_run(harness, tmp_path)
    tables = _module("tables", monkeypatch)

    page = tmp_path / "results.md"
    assert tables.main(["--results", str(tmp_path), "--out", str(page)]) == 0
    text = page.read_text()
    assert text.count("## fake_bench") == 1 and text.count("| ours |") == 1  # the latest only
    assert "| model | median step (s) |" in text and "|---|---:|" in text
    assert "| ours | 0.125 |" in text and "| peer \\| theirs |  |" in text
    assert "- ours / peer: not measured" in text
    lines = text.splitlines()  # where the table's figures were taken, right under it
    below = lines[lines.index("| peer \\| theirs |  |") + 2]
    assert below.startswith("*") and "cores), commit " in below and " at start" in below
    assert "python benchmarks/fake_bench.py" in text
    assert tables.main(["--results", str(tmp_path), "--out", str(page), "--check"]) == 0
    page.write_text(text + "hand edit\n")
    assert tables.main(["--results", str(tmp_path), "--out", str(page), "--check"]) == 1


def test_every_table_says_cpu_commit_and_load(monkeypatch) -> None:
    """A figure taken on a shared machine says so; a missing record says it is missing."""
    tables = _module("tables", monkeypatch)
    env = {"cpu": "Xeon", "cpu_count": 2, "commit": "0123456789abcdef-dirty"}
    busy = tables.provenance({**env, "load_average": [3.5, 2.0, 1.0]})
    assert busy == (
        "*Xeon (2 cores), commit 0123456789ab (dirty), "
        "load average 3.5 at start (at or above its 2 cores: shared with other work).*"
    )
    quiet = tables.provenance({**env, "load_average": [0.4, 0.2, 0.1]})
    assert quiet.endswith("load average 0.4 at start.*") and "shared" not in quiet
    assert tables.provenance({}) == (
        "*CPU not recorded, commit not recorded, load average not recorded.*"
    )


def test_docs_page_is_generated_from_the_result_files(monkeypatch) -> None:
    """docs/benchmarks/results.md is what tables.py makes of benchmarks/results/."""
    tables = _module("tables", monkeypatch)
    assert tables.main(["--check"]) == 0, "run: python benchmarks/tables.py"


def test_each_variant_keeps_its_own_latest_run(tmp_path, monkeypatch) -> None:
    """One benchmark run on different inputs (interval_coverage on ETT, then on FD001): the
    later run on other inputs does not hide the earlier one; a later run on the same does."""
    harness = _harness(monkeypatch)
    for variant, figure in (("a", 1.0), ("b", 2.0), ("a", 3.0)):
        args = argparse.Namespace(seed=None, results=str(tmp_path))
        run = harness.start("fake_bench", args, variant=variant)
        run.row("step", {"model": "ours", "median step": figure})
        run.write()
    variants = sorted(json.loads(p.read_text())["variant"] for p in tmp_path.glob("*.json"))
    assert variants == ["a", "a", "b"]  # within one second: -2, -3 after the stamp
    tables = _module("tables", monkeypatch)
    page = tmp_path / "results.md"
    assert tables.main(["--results", str(tmp_path), "--out", str(page)]) == 0
    text = page.read_text()
    assert "## fake_bench (a)" in text and "## fake_bench (b)" in text
    assert "| ours | 3 |" in text and "| ours | 2 |" in text and "| ours | 1 |" not in text
