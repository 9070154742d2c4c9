"""Units of columns: written once in the job file's column map, read by whoever draws them."""

from __future__ import annotations

from pathlib import Path

import pytest

from mfgtx.data import ColumnMap
from mfgtx.jobs import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_units_are_kept_as_pairs_and_looked_up_by_column() -> None:
    cols = ColumnMap(lot="lot", time="t", units={"temp": "°C", "p": "bar"})
    assert cols.units == (("temp", "°C"), ("p", "bar"))
    assert cols.unit("temp") == "°C" and cols.unit("flow") == ""
    assert ColumnMap(lot="lot", time="t", units=cols.units) == cols  # JSON pairs read back
    hash(cols)  # a frozen column map stays hashable


@pytest.mark.parametrize("units", ["°C", {"temp": 3}, {"": "°C"}, [("temp",)]])
def test_a_unit_that_is_not_text_for_a_column_is_refused(units) -> None:
    with pytest.raises(ValueError, match="units"):
        ColumnMap(lot="lot", time="t", units=units)


def test_the_sample_job_files_give_the_plant_units() -> None:
    job = load_config(ROOT / "pipelines" / "configs" / "sample_quality.yaml")
    assert job.data is not None
    assert job.data.column_map().unit("temperature_c") == "°C"
    rul = load_config(ROOT / "pipelines" / "configs" / "sample_rul.yaml")
    assert rul.data is not None and rul.data.column_map().unit("rul_cycles") == "cycles"


def test_units_in_a_job_file_are_a_mapping(tmp_path: Path) -> None:
    text = (ROOT / "pipelines" / "configs" / "sample_quality.yaml").read_text()
    bad = tmp_path / "job.yaml"
    start = text.index("    units: {")
    end = text.index("\n", start)
    bad.write_text(text[:start] + "    units: [°C, bar]" + text[end:])
    with pytest.raises(ConfigError, match=r"data\.columns\.units: expected a mapping"):
        load_config(bad)
