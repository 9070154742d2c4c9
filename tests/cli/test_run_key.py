"""What a training run's key (saved in its checkpoint, checked by ``--resume``) holds."""

from __future__ import annotations

from pathlib import Path

from mfgtx.jobs import load_config
from mfgtx.jobs.train import run_key
from mfgtx.kinds import job_kind

JOB = Path(__file__).resolve().parents[2] / "pipelines" / "configs" / "sample_quality.yaml"


def _key(*overrides: str) -> dict:
    config = load_config(JOB, list(overrides))
    return run_key(config, job_kind(config), "same data")


def test_units_only_label_the_charts_and_are_not_part_of_the_run_key() -> None:
    # a checkpoint written before units were a key (or with other units) still resumes
    assert _key("data.columns.units={}") == _key("data.columns.units={temperature_c: K}")
    assert "units" not in _key()["data"]["columns"]


def test_what_changes_the_weights_is_part_of_the_run_key() -> None:
    assert _key("model.d_model=16") != _key("model.d_model=32")
    assert _key("split.gap=0") != _key("split.gap=1")
