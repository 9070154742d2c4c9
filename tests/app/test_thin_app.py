"""The app's small helpers: the library's warnings reach the page, what a bundle's recorded
job says is read from its manifest, and a reader's error keeps naming the upload's line."""

from __future__ import annotations

import sys
import warnings

import pytest
from streamlit.testing.v1 import AppTest

from mfgtx.data import DataError

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))
from _recorded import recorded
from _tables import read_csv, upload_reason

PAGE = """
import sys
import warnings

sys.path.insert(0, APP)
from _common import guarded

from mfgtx.data import DataWarning


@guarded
def page() -> None:
    warnings.warn("lot L1-0003: 4 rows without a time were left out", DataWarning, 2)
    warnings.warn("a warning of another library", DeprecationWarning, 2)


page()
"""


def test_a_library_warning_is_shown_on_the_page() -> None:
    at = AppTest.from_string(PAGE.replace("APP", repr(str(ROOT / "app"))), default_timeout=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        at.run()
    assert not at.exception
    shown = [w.value for w in at.warning]
    assert shown == ["lot L1-0003: 4 rows without a time were left out"]  # ours only, once


def _manifest(data: dict) -> dict:
    return {"extra": {"job_file": {"data": data}}}


def test_the_recorded_job_gives_format_file_and_units(tmp_path) -> None:
    export = tmp_path / "export.csv"
    export.write_text("lot;t;temp\n")
    job = recorded(
        _manifest(
            {
                "source": {"path": str(export), "delimiter": ";", "decimal": ",", "encoding": "cp1252"},
                "columns": {"lot": "lot", "time": "t", "units": {"temp": "°C"}},
            }
        )
    )  # fmt: skip
    assert (job.fmt.delimiter, job.fmt.decimal, job.fmt.encoding) == (";", ",", "cp1252")
    assert job.trained_on == export.resolve()
    assert job.unit("temp") == "°C" and job.unit("lot") == ""


@pytest.mark.parametrize(
    "manifest",
    [None, {}, {"extra": {"job_file": "not a job"}},
     _manifest({"source": {"url": "sqlite:///plant.db", "table": "sensors"}}),
     _manifest({"source": {"path": "gone.csv", "delimiter": "two"}})],
)  # fmt: skip
def test_a_bundle_without_a_usable_job_gives_plain_csv_and_no_units(manifest) -> None:
    job = recorded(manifest)
    assert job.fmt.plain and job.trained_on is None and dict(job.units) == {}


def test_a_bad_row_names_the_upload_and_its_line_once() -> None:
    with pytest.raises(DataError) as e:
        read_csv(b"lot,t\nA,1,2\n", "upload.csv", {"delimiter": ",", "decimal": ".",
                 "encoding": "utf-8"}, ("lot",))  # fmt: skip
    assert e.value.file == "upload.csv" and e.value.line == 2
    assert upload_reason("upload.csv", e.value) == str(e.value)
    other = DataError("lot A has 3 rows; the model reads 60", lot="A")
    assert upload_reason("upload.csv", other) == f"upload.csv: {other}"


def test_a_format_whose_parts_clash_is_refused_in_words_not_as_a_crash() -> None:
    with pytest.raises(DataError, match=r"decimal ',' needs another delimiter") as e:
        read_csv(b"lot;t\nA;1\n", "upload.csv", {"delimiter": ",", "decimal": ",",
                 "encoding": "utf-8"}, ("lot",))  # fmt: skip
    assert e.value.file == "upload.csv"
