"""CSV exports as plants write them: ``;`` between values, decimal commas, Windows encodings.

A job source reads them with ``delimiter`` (found in the header line by default),
``decimal`` and ``encoding``, and gives the same rows as a plain CSV of the same values.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from mfgtx.data import ColumnMap, DataError, read_table
from mfgtx.jobs.config import SourceSection
from mfgtx.jobs.sources import csv_delimiter, read_csv_bytes, read_frame, without_position

PLAIN = "lot,time,temp \u00b0C,pressure\nA,2026-01-01 00:00,1.5,2\nA,2026-01-01 01:00,-0.25,1e-3\n"


def _european(text: str) -> str:
    """``text`` as a European export: ``;`` between values, commas as decimal marks."""

    def number(v: str) -> bool:
        return v[:1].isdigit() or v[:1] in "-."

    lines = [";".join(v.replace(".", ",") if number(v) else v for v in ln.split(","))
             for ln in text.splitlines()]  # fmt: skip
    return "\n".join(lines) + "\n"


def test_european_export_reads_as_the_plain_csv(tmp_path: Path) -> None:
    plain, euro = tmp_path / "plain.csv", tmp_path / "euro.csv"
    plain.write_text(PLAIN, encoding="utf-8")
    euro.write_bytes(_european(PLAIN).encode("cp1252"))
    assert euro.read_bytes().count(b";") == 9 and b"1,5" in euro.read_bytes()
    source = SourceSection(path=str(euro), decimal=",", encoding="cp1252")
    assert csv_delimiter(euro, source) == (";", "found in its header line")
    got = without_position(read_frame(source))
    want = without_position(read_frame(SourceSection(path=str(plain))))
    pd.testing.assert_frame_equal(got, want)
    assert got["temp \u00b0C"].tolist() == ["1.5", "-0.25"]


def test_decimal_commas_change_numbers_only(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("lot;time;temp;note\nA,1;01.02.2026 13:00:00,5;1,5;3,2 bar\n")
    row = read_frame(SourceSection(path=str(f), decimal=",")).iloc[0]
    assert (row["lot"], row["time"], row["temp"], row["note"]) == (
        "A,1", "01.02.2026 13:00:00,5", "1.5", "3,2 bar"
    )  # fmt: skip


def test_a_decimal_comma_without_the_option_is_named(tmp_path: Path) -> None:
    f = tmp_path / "euro.csv"
    f.write_text(_european(PLAIN.replace(" \u00b0C", "")))
    frame = read_frame(SourceSection(path=str(f)))  # ';' found; the commas stay text
    with pytest.raises(DataError, match=r"'1,5', expected a number .*source.decimal: ','"):
        read_table(frame, ColumnMap(lot="lot", time="time", sensors=("temp", "pressure")))


def test_delimiter_found_in_a_gzip_header_and_outside_quotes(tmp_path: Path) -> None:
    f = tmp_path / "export.csv.gz"
    f.write_bytes(gzip.compress(b'lot;"temp, C";p\nA;1;2\n'))
    source = SourceSection(path=str(f))
    assert csv_delimiter(f, source)[0] == ";"
    assert list(without_position(read_frame(source)).columns) == ["lot", "temp, C", "p"]
    tab = tmp_path / "export.txt"
    tab.write_text("lot\ttemp\nA\t1\n")
    assert csv_delimiter(tab, SourceSection(path=str(tab)))[0] == "\t"
    plain = tmp_path / "one_column.csv"
    plain.write_text("lot\nA\n")
    assert csv_delimiter(plain, SourceSection(path=str(plain))) == (",", "the default")


def test_a_given_delimiter_wins_over_the_header(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("lot|temp;C\nA|1;5\n")  # the header holds one '|' and one ';'
    source = SourceSection(path=str(f), delimiter="|")
    assert list(without_position(read_frame(source)).columns) == ["lot", "temp;C"]


def test_wrong_encoding_and_wrong_delimiter_are_named(tmp_path: Path) -> None:
    f = tmp_path / "windows.csv"
    f.write_bytes("lot,temp \u00b0C\nA,1\n".encode("cp1252"))
    with pytest.raises(DataError, match=r"windows.csv is not utf-8 text \(byte 0xb0.*cp1252"):
        read_frame(SourceSection(path=str(f)))
    bad = tmp_path / "ragged.csv"
    bad.write_text("lot;temp\nA;1\nB;1;2;3\n")
    with pytest.raises(DataError, match=r"separated by ';' \(found in its header line\)"):
        read_frame(SourceSection(path=str(bad)))
    comma = tmp_path / "comma.csv"
    comma.write_text("lot,temp\nA,1\n")
    with pytest.raises(DataError, match=r"cannot also be the decimal mark"):
        read_frame(SourceSection(path=str(comma), decimal=","))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delimiter": ";;"}, "one character"),
        ({"delimiter": '"'}, "one character"),
        ({"delimiter": ",", "decimal": ","}, "another delimiter"),
        ({"encoding": "klingon"}, "not a text encoding"),
        ({"format": "parquet", "decimal": ","}, "for CSV files"),
    ],
)
def test_source_options_are_checked(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SourceSection(path="export.csv", **options)
    assert SourceSection(path="export.csv", delimiter="tab").delimiter == "tab"


def test_blank_lines_keep_the_file_line_numbers(tmp_path: Path) -> None:
    """A blank line (Excel leaves them, ``;;;`` too) is dropped, and the lines after it keep
    their own numbers, so an error names the line a person finds in the file."""
    f = tmp_path / "export.csv"
    f.write_text("lot;time;temp\nA;2026-01-01;1\n\n;;\nA;2026-01-02;hot\n")
    frame = read_frame(SourceSection(path=str(f), chunk_rows=2))  # the blank lines span chunks
    assert frame["_line"].tolist() == [2, 5]
    with pytest.raises(DataError, match=r"row 1 .*'hot'"):
        read_table(without_position(frame), ColumnMap(lot="lot", time="time", sensors=("temp",)))
    assert read_csv_bytes(f.read_bytes(), "export.csv")["_line"].tolist() == [2, 5]


def test_an_upload_reads_as_the_same_file_on_disk(tmp_path: Path) -> None:
    f = tmp_path / "euro.csv.gz"
    f.write_bytes(gzip.compress(_european(PLAIN).encode("cp1252")))
    source = SourceSection(path=str(f), decimal=",", encoding="cp1252")
    got = read_csv_bytes(f.read_bytes(), f.name, decimal=",", encoding="cp1252")
    pd.testing.assert_frame_equal(got, read_frame(source))
    with pytest.raises(ValueError, match="decimal ',' needs another delimiter"):
        read_csv_bytes(b"a,b\n1,2\n", "x.csv", delimiter=",", decimal=",")
    with pytest.raises(DataError, match="x.csv holds no rows"):
        read_csv_bytes(b"a;b\n\n", "x.csv")
