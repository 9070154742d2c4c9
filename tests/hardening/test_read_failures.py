"""A file that cannot be read is named, in plant words, never with an empty message; in a
folder it goes to the errors file and the other files are scored; a column name that appears
twice is refused naming both positions, whatever the format."""

from __future__ import annotations

import csv
import gzip
import re
import sqlite3
import zlib
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mfgtx.cli import main
from mfgtx.data import DataError, io
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobfile.sources import read_csv_bytes, read_frame
from tests.cli.conftest import summary

#: Failures whose text is empty or says nothing to a plant engineer, as libraries raise them.
SILENT = [
    EOFError(),
    MemoryError(),
    OSError(),
    zlib.error(),
    csv.Error(),
    pa.lib.ArrowInvalid(""),
    pa.lib.ArrowNotImplementedError(""),
    pd.errors.ParserError(""),
    UnicodeError(),
    RuntimeError(),
]


def _reason(message: str, name: str) -> str:
    """What a message says after naming ``name``."""
    assert name in message, message
    return message.split(name, 1)[1].strip(" :")


@pytest.mark.parametrize("err", SILENT, ids=lambda e: type(e).__name__)
def test_a_library_failure_is_named_with_the_file(tmp_path, monkeypatch, err) -> None:
    def fail(*args, **kwargs):
        raise err

    table = tmp_path / "lots.parquet"
    pd.DataFrame({"lot": ["A"], "temp": [1.0]}).to_parquet(table)
    monkeypatch.setattr(pq, "ParquetFile", fail)
    with pytest.raises(DataError) as e:
        read_frame(SourceSection(path=str(table)))
    assert e.value.file == "lots.parquet" and len(_reason(str(e.value), "lots.parquet")) > 8

    export = tmp_path / "lots.csv"
    export.write_text("lot,temp\nA,1\n")
    monkeypatch.setattr(io, "csv_frames", fail)
    with pytest.raises(DataError) as e:
        read_frame(SourceSection(path=str(export)))
    assert e.value.file == "lots.csv" and len(_reason(str(e.value), "lots.csv")) > 8
    with pytest.raises(DataError) as e:
        read_csv_bytes(export.read_bytes(), "upload.csv")
    assert len(_reason(str(e.value), "upload.csv")) > 8


@pytest.mark.parametrize("err", SILENT[:4], ids=lambda e: type(e).__name__)
def test_a_database_failure_is_named_with_the_source(tmp_path, monkeypatch, err) -> None:
    db = tmp_path / "plant.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sensors (lot TEXT, temp REAL)")

    def fail(*args, **kwargs):
        raise err

    monkeypatch.setattr(pd, "read_sql", fail)
    with pytest.raises(DataError, match=r"plant.db \(sensors\): cannot read: \S"):
        read_frame(SourceSection(url=f"sqlite:///{db}", table="sensors"))


def _damaged(folder: Path, text: str) -> dict[str, str]:
    """Files that cannot be read, each with what its errors-file reason says."""
    (folder / "b_magic.parquet").write_bytes(b"PAR1 but not a Parquet file")
    (folder / "c_cut.csv.gz").write_bytes(gzip.compress(text.encode())[:-40])
    bad = bytearray(gzip.compress(text.encode()))
    bad[60:80] = b"\xff" * 20
    (folder / "d_damaged.csv.gz").write_bytes(bytes(bad))
    (folder / "e_windows.csv").write_bytes(text.replace("lot", "lot\u00b0", 1).encode("cp1252"))
    pq.write_table(pa.table({"x": [1]}), folder / "f_trunc.parquet")
    data = (folder / "f_trunc.parquet").read_bytes()
    (folder / "f_trunc.parquet").write_bytes(data[: len(data) // 2])
    return {
        "b_magic.parquet": "Parquet",
        "c_cut.csv.gz": "ends early",
        "d_damaged.csv.gz": "damaged",
        "e_windows.csv": "not utf-8 text (byte 0xb0 on line 1",
        "f_trunc.parquet": "Parquet",
    }


def test_damaged_files_in_a_folder_are_listed_by_name_and_the_rest_scored(
    quality_bundle, plant, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    text = (plant / "sensors.csv").read_text()
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "a_good.csv").write_text(text)
    expected = _damaged(folder, text)
    out = tmp_path / "s.parquet"
    code = main(["score", str(job), "--set", f"score.source={{path: {folder}}}",
                 "--set", f"score.output.path={out}"])  # fmt: skip
    result = summary(capsys.readouterr().out)
    assert code == 0, result
    errors = pd.read_csv(result["errors_file"]).set_index("file")
    assert sorted(errors.index) == sorted(expected)
    for name, words in expected.items():
        assert words in errors.loc[name, "reason"], errors.loc[name, "reason"]
    lots = pd.read_csv(folder / "a_good.csv")["lot"]
    assert set(pd.read_parquet(out)["lot"]) == set(lots)


def test_a_damaged_file_alone_stops_the_job_with_its_name(quality_bundle, tmp_path, capsys):
    job, _ = quality_bundle
    source = tmp_path / "cut.csv.gz"
    source.write_bytes(gzip.compress(b"lot,timestamp\n" + b"A,2026-03-02T07:22:00Z\n" * 9999)[:-40])
    code = main(["score", str(job), "--set", f"score.source={{path: {source}}}",
                 "--set", f"score.output.path={tmp_path / 's.parquet'}"])  # fmt: skip
    captured = capsys.readouterr()
    error = summary(captured.out)["error"]
    assert code == 2 and "nothing could be scored" in error
    reason = pd.read_csv(re.search(r"see (.+)\)$", error)[1])["reason"].iloc[0]
    assert "cut.csv.gz" in reason and "ends early" in reason


def test_a_column_twice_in_a_csv_header_is_refused_naming_both(tmp_path) -> None:
    text = "lot,temperature_c,time,temperature_c\nA,0,2026-03-02T07:22:00Z,81.5\n"
    f = tmp_path / "sensors.csv"
    f.write_text(text)
    message = (r"sensors.csv: column 'temperature_c' appears twice in the header "
               r"\(columns 2 and 4\); rename one")  # fmt: skip
    with pytest.raises(DataError, match=message) as e:
        read_frame(SourceSection(path=str(f)))
    assert e.value.column == "temperature_c" and e.value.line == 1
    with pytest.raises(DataError, match=message):
        read_csv_bytes(text.encode(), "sensors.csv")
    g = tmp_path / "sensors.csv.gz"
    g.write_bytes(gzip.compress(text.replace(",", ";").encode()))
    with pytest.raises(DataError, match=r"'temperature_c' appears twice .*columns 2 and 4"):
        read_frame(SourceSection(path=str(g)))


def test_a_column_twice_in_a_parquet_file_or_a_query_is_refused(tmp_path) -> None:
    table = pa.table([pa.array(["A"]), pa.array([0.0]), pa.array([81.5])],
                     names=["lot", "temperature_c", "temperature_c"])  # fmt: skip
    pq.write_table(table, tmp_path / "sensors.parquet")
    with pytest.raises(DataError, match=r"sensors.parquet: column 'temperature_c' appears twice"
                       r" .*\(columns 2 and 3\)"):  # fmt: skip
        read_frame(SourceSection(path=str(tmp_path / "sensors.parquet")))
    db = tmp_path / "plant.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE s (lot TEXT, a REAL, b REAL)")
        conn.execute("INSERT INTO s VALUES ('A', 0, 81.5)")
    query = "SELECT lot, a AS temperature_c, b AS temperature_c FROM s"
    with pytest.raises(DataError, match=r"column 'temperature_c' appears twice .*columns 2 and 3"):
        read_frame(SourceSection(url=f"sqlite:///{db}", query=query))


def test_a_column_named_as_a_reader_column_is_refused(tmp_path) -> None:
    f = tmp_path / "sensors.csv"
    f.write_text("lot,_line,temp\nA,7,1\n")
    with pytest.raises(DataError, match=r"column '_line' \(column 2\) has a name mfgtx keeps"):
        read_frame(SourceSection(path=str(f)))


def test_the_errors_file_names_lines_as_whole_numbers(tmp_path) -> None:
    from mfgtx.jobs.sinks import write_errors

    path = tmp_path / "scores.errors.csv"
    write_errors(path, [
        {"lot": "L1-0001", "file": "a.csv.gz", "line": 2.0, "reason": "lot too large"},
        {"lot": None, "file": "a.csv.gz", "line": None, "reason": "inflates past the limit"},
    ])  # fmt: skip
    assert path.read_text().splitlines()[1:] == [
        "L1-0001,a.csv.gz,2,,lot too large",
        ",a.csv.gz,,,inflates past the limit",
    ]


def test_a_lot_cut_short_by_a_file_that_stops_is_listed_not_scored(tmp_path) -> None:
    import gzip

    from mfgtx.jobfile.config import SourceSection
    from mfgtx.jobfile.sources import iter_lot_frames

    path = tmp_path / "plant.csv.gz"
    with gzip.open(path, "wt") as f:  # 400 lots of 100 rows, about 1.5 MB of text
        f.write("lot,time,temp\n")
        for lot in range(400):
            f.writelines(f"L{lot:03d},2026-03-02T07:{m // 60:02d}:{m % 60:02d},1.5\n"
                         for m in range(100))  # fmt: skip
    source = SourceSection(path=str(path), chunk_rows=500, max_inflated_mb=1)
    problems: list[dict[str, object]] = []
    lots = pd.concat(list(iter_lot_frames(source, "lot", "time", problems=problems)))
    sizes = lots.groupby("lot").size()
    assert len(sizes) > 0 and (sizes == 100).all()  # every lot scored is whole
    cut = [p for p in problems if p.get("lot")]
    assert len(cut) == 1 and "stopped while this lot was read" in str(cut[0]["reason"])
    assert cut[0]["lot"] not in sizes.index and f"L{len(sizes):03d}" == cut[0]["lot"]
    assert any("inflates to more than 1 MB" in str(p["reason"]) for p in problems)
