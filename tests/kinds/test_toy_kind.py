"""A fourth kind, defined in tests/kinds/toy only, runs through every command and
:func:`mfgtx.load`: the proof that a new model is one package that registers itself."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import mfgtx
from mfgtx.cli import main
from mfgtx.kinds import KINDS, kind_of_class
from tests.cli.conftest import quality_job, summary, write_job

ROOT = Path(__file__).resolve().parents[2]
TOY = "tests.kinds.toy"


@pytest.fixture(scope="module")
def toy():
    """The toy kind, registered for this module's tests only (as a plugin's import would)."""
    yield importlib.import_module(TOY).TOY
    KINDS.pop("toy", None)
    for name in [m for m in sys.modules if m == TOY or m.startswith(TOY + ".")]:
        del sys.modules[name]


def toy_job(plant: Path, out: Path) -> dict:
    job = quality_job(plant, out, toy={"task": "classification"})
    del job["model"]  # the sensor kind's section: this job names the toy's instead
    return job


def test_the_toy_kind_trains_evaluates_scores_and_loads(toy, plant, tmp_path, capsys) -> None:
    job = toy_job(plant, tmp_path)
    path = write_job(tmp_path / "job.yaml", job)

    assert main(["train", "toy", str(path)]) == 0
    trained = summary(capsys.readouterr().out)
    assert trained["kind"] == "toy"
    assert main(["evaluate", str(path)]) == 0
    evaluated = summary(capsys.readouterr().out)
    assert evaluated["command"] == "evaluate" and evaluated["n_test"] > 0
    assert main(["score", str(path)]) == 0
    scored = pd.read_parquet(job["score"]["output"]["path"])
    assert {"p_0", "p_1", "decision"} <= set(scored.columns) and len(scored)

    predictor = mfgtx.load(job["bundle"])
    assert predictor.kind is toy and kind_of_class("tests.ToyModel") is toy
    frame = pd.read_csv(plant / "sensors.csv")
    rows = predictor.predict(frame)
    merged = scored.merge(rows, on=["lot", "window_end"], suffixes=("", "_load"))
    assert len(merged) == len(scored)
    pd.testing.assert_series_equal(merged["p_1"], merged["p_1_load"], check_names=False)


def test_a_command_in_another_process_finds_the_kind_through_mfgtx_kinds(
    toy, plant, tmp_path, capsys
) -> None:
    job = toy_job(plant, tmp_path)
    path = write_job(tmp_path / "job.yaml", job)
    assert main(["train", "toy", str(path)]) == 0
    capsys.readouterr()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MFGTX_KINDS", None)
    command = [sys.executable, "-m", "mfgtx", "score", str(path)]
    without = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert without.returncode == 2 and "toy: unknown key" in without.stdout + without.stderr
    with_it = subprocess.run(
        command, cwd=ROOT, env={**env, "MFGTX_KINDS": TOY}, capture_output=True, text=True
    )
    assert with_it.returncode == 0, with_it.stderr[-2000:]
    assert summary(with_it.stdout)["command"] == "score"


def test_a_plugin_that_cannot_be_imported_is_named(monkeypatch) -> None:
    from mfgtx.jobs import ConfigError
    from mfgtx.kinds import load_plugins

    monkeypatch.setenv("MFGTX_KINDS", "no_such_plant_module")
    with pytest.raises(
        ConfigError, match="MFGTX_KINDS names the kind module 'no_such_plant_module'"
    ):
        load_plugins()
