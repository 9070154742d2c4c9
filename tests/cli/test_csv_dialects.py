"""CSV exports as plants write them: ``;`` between values, decimal commas, Windows encodings.

A job source reads them with ``delimiter`` (found in the header line by default),
``decimal`` and ``encoding``, and gives the same rows as a plain CSV of the same values.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import random
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from mfgtx.data import ColumnMap, DataError, read_table
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobfile.sources import csv_delimiter, read_csv_bytes, read_frame, without_position

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


def _reference(text: str, sep: str) -> list[list[object]]:
    """Records of ``text`` as Python's csv reader reads them: values (``None`` when empty),
    then the physical line each starts on; blank records left out, short ones filled."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    n, out, before = len(next(reader)), [], 1
    for row in reader:
        start, before = before + 1, reader.line_num
        if any(row):
            out.append([v or None for v in (row + [""] * n)[:n]] + [start])
    return out


def _records(frame: pd.DataFrame) -> list[list[object]]:
    rows = without_position(frame).astype(object).where(frame.notna(), None).values.tolist()
    return [[*r, int(line)] for r, line in zip(rows, frame["_line"], strict=True)]


def test_records_and_their_lines_match_the_csv_reader_across_block_ends(monkeypatch) -> None:
    """Parity of the block reader (pandas' parser, the csv reader where a block cannot be
    parsed alone) with Python's csv reader on quoted line breaks, doubled and mid-value
    quotes, blank and short rows, every kind of line end, with blocks of a few characters so
    that records run across block ends."""
    from mfgtx.data import _csv
    from mfgtx.data import io as data_io

    rng = random.Random(7)
    values = ['"a\nb"', '"x\r\ny"', '"p\rq"', '"say ""hi"""', '"c;d,e"', '5"', "", "12", "-0.5"]
    for trial in range(30):
        sep, end = rng.choice([",", ";"]), rng.choice(["\n", "\r\n", "\r"])
        n = rng.randint(1, 4)
        lines = [sep.join(f"c{i}" for i in range(n))]
        for _ in range(rng.randint(0, 30)):
            m = n if rng.random() < 0.85 else rng.randint(0, n)
            lines.append(sep.join(rng.choice(values) for _ in range(m)))
        text = end.join(lines) + end * rng.randint(0, 1)
        want = _reference(text, sep)
        for read in (7, 1 << 20):
            monkeypatch.setattr(_csv, "_READ_CHARS", read)
            fmt, rows = data_io.CsvFormat(delimiter=sep), rng.randint(1, 9)
            frames = list(
                data_io._csv_chunks(text.encode(), "t.csv", fmt, chunk_rows=rows, chunk_mb=32,
                               max_inflated_mb=2048)
            )  # fmt: skip
            got = _records(pd.concat(frames)) if frames else []
            assert got == want, (trial, read, text)


def test_a_quoted_line_break_does_not_shift_later_line_numbers(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text(
        'lot,t,note,temp\nA,1,"cleaned,\nrestarted",1\n\nA,2,,2\nA,3,"a\r\nb\rc",3\nA,4,,hot\n'
    )
    frame = read_frame(SourceSection(path=str(f)))
    assert frame["_line"].tolist() == [2, 5, 6, 9]  # pandas said [2, 4, 5, 6]
    with pytest.raises(DataError, match=r"export.csv line 9.*'hot'"):
        read_table(frame, ColumnMap(lot="lot", time="t", sensors=("temp",)))


def test_a_ragged_row_and_an_undecodable_byte_name_their_physical_line(tmp_path: Path) -> None:
    ragged = tmp_path / "ragged.csv"
    ragged.write_text('lot;note;temp\nA;"two\nlines";1\nA;x;2;3\n')
    with pytest.raises(DataError, match=r"line 4 holds 4 values, the header 3") as e:
        read_frame(SourceSection(path=str(ragged)))
    assert e.value.line == 4 and e.value.file == "ragged.csv"
    late = tmp_path / "late.csv"  # the bad byte far past the first block of text pandas read
    late.write_bytes(("lot,temp\n" + "A,1\n" * 30_000 + "A,5 \u00b0C\n").encode("cp1252"))
    with pytest.raises(DataError, match=r"late.csv is not utf-8 text \(byte 0xb0 on line 30002"):
        read_frame(SourceSection(path=str(late)))


def test_trailing_empty_values_are_dropped_and_extra_values_refused(tmp_path: Path) -> None:
    """Excel writes ``A,1,`` under a header ``lot,t``: the empty value past the header is
    dropped. pandas made the first column the index and shifted every value silently."""
    f = tmp_path / "export.csv"
    f.write_text("lot,t\nA,1,\nB,2,\n")
    frame = read_frame(SourceSection(path=str(f)))
    assert without_position(frame).values.tolist() == [["A", "1"], ["B", "2"]]


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip"])
def test_every_compression_reads_as_the_plain_file(tmp_path: Path, kind: str) -> None:
    plain = tmp_path / "plain.csv"
    plain.write_bytes(_european(PLAIN).encode("cp1252"))
    packed = tmp_path / f"export.csv.{kind}"
    data = plain.read_bytes()
    if kind == "zip":
        with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("export.csv", data)
    else:
        packed.write_bytes({"gz": gzip, "bz2": bz2, "xz": lzma}[kind].compress(data))
    options = {"decimal": ",", "encoding": "cp1252"}
    want = without_position(read_frame(SourceSection(path=str(plain), **options)))
    got = read_frame(SourceSection(path=str(packed), **options))
    pd.testing.assert_frame_equal(without_position(got), want)
    upload = read_csv_bytes(packed.read_bytes(), packed.name, **options)
    pd.testing.assert_frame_equal(without_position(upload), want)
