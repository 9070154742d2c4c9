"""Uploads written as plants write them: ``;`` between values and decimal commas.

An upload is read as ``mfgtx score`` reads a job's CSV source. Its format (delimiter,
decimal mark, encoding) is chosen under "CSV format", which starts as the bundle's recorded
job read its training data.
"""

from __future__ import annotations

import shutil

import pandas as pd

from tests.hardening.test_signing import _reforge  # edits the manifest, re-checksums

from .conftest import SAMPLE
from .test_dashboard import _app, _clean, _texts
from .test_score_page import _page

LOTS = ["L1-0001", "L2-0003", "L3-0004"]


def _part() -> pd.DataFrame:
    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    return sensors[sensors["lot"].isin(LOTS)].reset_index(drop=True)


def _european(frame: pd.DataFrame) -> bytes:
    """``frame`` as a European export: ``;`` between values, decimal commas, cp1252."""
    text = frame.to_csv(index=False, sep=";", decimal=",")
    assert "," in text.splitlines()[1], "the sample's readings have decimals"
    return text.encode("cp1252")


def _scored(at, name: str, data: bytes, **fmt: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    at.file_uploader(key="score_csv").set_value((name, data, "text/csv")).run()
    for what, value in fmt.items():  # in the form: sent with the button
        at.selectbox(key=f"score_csv_{what}").set_value(value)
    at.button(key="score_go").click().run()
    _clean(at)
    frames = [d.value for d in at.dataframe]
    return frames[0], (frames[1] if len(frames) > 1 else None)


def test_a_european_upload_scores_as_the_plain_file_once_its_decimal_mark_is_chosen(app_env):
    at = _page()
    plain, _ = _scored(at, "plain.csv", _part().to_csv(index=False).encode())
    assert plain["lot"].tolist() == LOTS

    at = _page()
    rows, errors = _scored(at, "euro.csv", _european(_part()))
    assert rows.empty and errors["lot"].tolist() == LOTS  # '180,5' is no number in '.' files
    assert errors["reason"].str.contains("Decimal mark: comma under CSV format").all()
    assert not errors["reason"].str.contains("source.decimal").any(), "page words, not job words"

    rows, errors = _scored(at, "euro.csv", _european(_part()), decimal=",", encoding="cp1252")
    assert errors is None
    pd.testing.assert_frame_equal(rows, plain)


def test_a_file_that_is_not_in_the_chosen_encoding_is_named(app_env):
    at = _page()
    data = _european(_part()).replace(b"temperature_c", b"temperature_\xb0c")  # cp1252 degree
    at.file_uploader(key="score_csv").set_value(("euro.csv", data, "text/csv")).run()
    at.selectbox(key="score_csv_decimal").set_value(",")
    at.button(key="score_go").click().run()
    _clean(at)
    errors = _texts(at.error)
    assert any("euro.csv is not utf-8 text (byte 0xb0" in e and "Encoding under CSV format" in e
               for e in errors), errors  # fmt: skip
    assert not at.dataframe


def test_the_format_starts_as_the_bundle_job_read_its_training_data(app_env, monkeypatch, tmp_path):
    european = tmp_path / "models" / "european"
    shutil.copytree(app_env / "sample_quality", european)

    def as_european(manifest):  # a bundle written before read options were saved
        source = manifest["extra"]["job_file"]["data"]["source"]
        source.update(delimiter=";", decimal=",", encoding="cp1252")
        manifest["input_spec"].pop("read")

    _reforge(european, as_european)
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path / "models"))

    at = _app("views/quality.py")
    data = _european(_part()[_part()["lot"] == "L3-0004"])
    at.file_uploader(key="quality_upload").set_value(("line3.csv", data, "text/csv")).run()
    _clean(at)
    assert not at.error, _texts(at.error)
    assert at.selectbox(key="quality_csv_delimiter").value == ";"
    assert at.selectbox(key="quality_csv_decimal").value == ","
    assert at.selectbox(key="quality_csv_encoding").value == "cp1252"
    assert at.selectbox(key="quality_lot").options == ["L3-0004"]
    assert any(t.startswith("Lot L3-0004 is a ") for t in _texts(at.markdown))

    at.selectbox(key="quality_csv_decimal").set_value(".").run()  # as a '.' file: refused
    errors = _texts(at.error)
    assert any(e.startswith("Upload refused: line3.csv line 2") and "Decimal mark: comma" in e
               for e in errors), errors  # fmt: skip
