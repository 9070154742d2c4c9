"""read_table: each bad input gets a specific error naming column, lot and line."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import ColumnMap, DataError, DataWarning, read_table

COLS = ColumnMap(lot="lot", time="timestamp", targets="quality", label_time="inspected_at")


def wide_frame() -> pd.DataFrame:
    t = pd.date_range("2026-03-02T06:00:00Z", periods=4, freq="1min")
    rows = []
    for lot, offset in (("L1-0001", 0), ("L1-0002", 10)):
        for i, ts in enumerate(t + pd.Timedelta(minutes=offset)):
            rows.append(
                {
                    "lot": lot,
                    "timestamp": ts.isoformat(),
                    "temperature_c": 180.0 + i,
                    "pressure_bar": 2.0 + 0.1 * i,
                    "quality": 0.9,
                    "inspected_at": (t[-1] + pd.Timedelta(hours=5)).isoformat(),
                }
            )
    return pd.DataFrame(rows)


def write_csv(tmp_path: Path, df: pd.DataFrame, name: str = "sensors.csv") -> Path:
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def test_wide_csv_round_trip(tmp_path: Path) -> None:
    table = read_table(write_csv(tmp_path, wide_frame()), COLS)
    assert table.sensors == ("temperature_c", "pressure_bar")
    assert table.lots == ["L1-0001", "L1-0002"]
    assert str(table.frame["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert table.frame["temperature_c"].tolist()[:2] == [180.0, 181.0]
    assert table.notes == ()
    assert table.lot_bounds() == {"L1-0001": (0, 4), "L1-0002": (4, 8)}


def test_parquet_and_long_layout_give_the_same_table(tmp_path: Path) -> None:
    df = wide_frame()
    wide = read_table(write_csv(tmp_path, df), COLS)
    path = tmp_path / "sensors.parquet"
    df.to_parquet(path)
    from_parquet = read_table(path, COLS)
    long = df.melt(
        id_vars=["lot", "timestamp", "quality", "inspected_at"],
        value_vars=["temperature_c", "pressure_bar"],
        var_name="sensor",
        value_name="value",
    )
    long_cols = ColumnMap(
        lot="lot",
        time="timestamp",
        targets="quality",
        label_time="inspected_at",
        layout="long",
        sensors=("temperature_c", "pressure_bar"),
    )
    from_long = read_table(write_csv(tmp_path, long, "long.csv"), long_cols)
    cols = ["lot", "timestamp", "temperature_c", "pressure_bar", "quality", "inspected_at"]
    pd.testing.assert_frame_equal(from_parquet.frame[cols], wide.frame[cols])
    pd.testing.assert_frame_equal(from_long.frame[cols], wide.frame[cols])


def test_nan_is_kept_not_filled(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[1, "temperature_c"] = np.nan
    table = read_table(write_csv(tmp_path, df), COLS)
    assert np.isnan(table.frame["temperature_c"].iloc[1])


def test_missing_column_named(tmp_path: Path) -> None:
    df = wide_frame().drop(columns="inspected_at")
    with pytest.raises(
        DataError,
        match=r"missing column\(s\) 'inspected_at' \(the label-time column, "
        r"data.columns.label_time\)",
    ):
        read_table(write_csv(tmp_path, df), COLS)
    cols = ColumnMap(lot="lot", time="timestamp", sensors=("temperature_c", "flow"))
    with pytest.raises(
        DataError, match=r"'flow' \(a sensor, data.columns.sensors\); found columns"
    ) as err:
        read_table(write_csv(tmp_path, wide_frame()), cols)
    assert err.value.column == "flow"
    assert "ColumnMap" not in str(err.value)


def test_misspelt_sensor_gets_a_did_you_mean(tmp_path: Path) -> None:
    cols = ColumnMap(lot="lot", time="timestamp", sensors=("temperatur_c",))
    with pytest.raises(
        DataError, match=r"'temperatur_c' \(a sensor, data.columns.sensors; did you mean "
        r"'temperature_c'\?\)"
    ):  # fmt: skip
        read_table(write_csv(tmp_path, wide_frame()), cols)


def test_non_numeric_sensor_value_names_column_line_and_lot(tmp_path: Path) -> None:
    df = wide_frame()
    df["pressure_bar"] = df["pressure_bar"].astype(object)
    df.loc[5, "pressure_bar"] = "err"
    cols = ColumnMap(lot="lot", time="timestamp", sensors=("temperature_c", "pressure_bar"))
    with pytest.raises(
        DataError, match=r"sensors.csv line 7 \(lot L1-0002\): column 'pressure_bar' holds 'err'"
    ) as err:
        read_table(write_csv(tmp_path, df), cols)
    assert (err.value.column, err.value.lot, err.value.row) == ("pressure_bar", "L1-0002", 5)


def test_non_numeric_column_left_out_with_warning_when_sensors_not_listed(tmp_path: Path) -> None:
    df = wide_frame()
    df["line"] = "L1"
    with pytest.warns(
        DataWarning, match=r"left out of the sensors: 'line' \(e.g. 'L1' at sensors.csv line 2\)"
    ):
        table = read_table(write_csv(tmp_path, df), COLS)
    assert "line" not in table.sensors and table.notes


def test_inf_is_refused(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[2, "temperature_c"] = np.inf
    with pytest.raises(
        DataError, match=r"line 4 \(lot L1-0001\): column 'temperature_c' holds inf"
    ):
        read_table(write_csv(tmp_path, df), COLS)


def test_unparseable_time(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[3, "timestamp"] = "2026-13-45T99:00:00+00:00"
    with pytest.raises(
        DataError,
        match=r"line 5 \(lot L1-0001\): cannot parse '2026-13-45T99:00:00\+00:00' in column 'timestamp'",
    ):
        read_table(write_csv(tmp_path, df), COLS)


def test_missing_time(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[6, "timestamp"] = None
    with pytest.raises(DataError, match=r"line 8 \(lot L1-0002\): no time in column 'timestamp'"):
        read_table(write_csv(tmp_path, df), COLS)


def test_mixed_time_zones(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[4, "timestamp"] = "2026-03-02 06:10:00"
    with pytest.raises(
        DataError,
        match=r"mixed time zones in column 'timestamp': sensors.csv line 2 has a zone .* line 6 has none",
    ):
        read_table(write_csv(tmp_path, df), COLS)


def test_different_offsets_are_converted_to_utc(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[0, "timestamp"] = "2026-03-02T07:00:00+01:00"  # same instant as 06:00Z
    table = read_table(write_csv(tmp_path, df), COLS)
    assert table.frame["timestamp"].iloc[0] == pd.Timestamp("2026-03-02T06:00:00Z")


def test_duplicate_timestamp_within_lot(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[2, "timestamp"] = df.loc[1, "timestamp"]
    with pytest.raises(
        DataError,
        match=r"lot L1-0001: two rows at time .* \(sensors.csv line 3 and sensors.csv line 4\)",
    ):
        read_table(write_csv(tmp_path, df), COLS)


def test_same_time_in_different_lots_is_fine(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[4:, "timestamp"] = df.loc[:3, "timestamp"].to_numpy()
    assert len(read_table(write_csv(tmp_path, df), COLS).frame) == 8


def test_unsorted_rows_are_sorted_and_reported(tmp_path: Path) -> None:
    df = wide_frame().iloc[[0, 2, 1, 3, 4, 5, 6, 7]]
    with pytest.warns(
        DataWarning, match=r"not in time order within lots .*line 4, lot L1-0001\); sorted"
    ):
        table = read_table(write_csv(tmp_path, df), COLS)
    assert table.frame["temperature_c"].tolist()[:4] == [180.0, 181.0, 182.0, 183.0]
    assert table.frame["_row"].tolist()[:4] == [0, 2, 1, 3]  # input positions are kept
    assert len(table.notes) == 1


def test_interleaved_lots_are_grouped(tmp_path: Path) -> None:
    df = wide_frame().iloc[[0, 4, 1, 5, 2, 6, 3, 7]]
    with pytest.warns(DataWarning):
        table = read_table(write_csv(tmp_path, df), COLS)
    assert table.lot_bounds() == {"L1-0001": (0, 4), "L1-0002": (4, 8)}


def test_missing_lot_id(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[6, "lot"] = None
    with pytest.raises(DataError, match=r"sensors.csv line 8: no lot id in column 'lot'"):
        read_table(write_csv(tmp_path, df), COLS)


def test_lot_without_any_observed_value(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[4:, ["temperature_c", "pressure_bar"]] = np.nan
    with pytest.raises(DataError, match=r"lot\(s\) \['L1-0002'\] have no observed sensor value"):
        read_table(write_csv(tmp_path, df), COLS)


def test_label_known_before_measurement(tmp_path: Path) -> None:
    df = wide_frame()
    df.loc[5, "inspected_at"] = "2026-03-01T00:00:00+00:00"
    with pytest.raises(
        DataError, match=r"line 7 \(lot L1-0002\): label known at .* before the row was measured"
    ):
        read_table(write_csv(tmp_path, df), COLS)


def test_key_column_must_be_constant_per_lot(tmp_path: Path) -> None:
    df = wide_frame()
    df["line"] = ["L1"] * 7 + ["L2"]
    cols = ColumnMap(lot="lot", time="timestamp", keys="line", sensors=("temperature_c",))
    with pytest.raises(DataError, match="lot L1-0002: key column 'line' changes within the lot"):
        read_table(write_csv(tmp_path, df), cols)


def test_targets_accept_pass_fail_words(tmp_path: Path) -> None:
    df = wide_frame()
    df["quality"] = ["pass", "fail", "PASS", "True", "false", "1", "0", ""]
    table = read_table(write_csv(tmp_path, df), COLS)
    assert table.frame["quality"].tolist()[:7] == [1, 0, 1, 1, 0, 1, 0]
    assert np.isnan(table.frame["quality"].iloc[7])
    df.loc[3, "quality"] = "maybe"
    with pytest.raises(DataError, match=r"column 'quality' holds 'maybe'"):
        read_table(write_csv(tmp_path, df), COLS)


def test_numeric_time_cycles(tmp_path: Path) -> None:
    df = pd.DataFrame({"unit": [1, 1, 1, 2, 2], "cycle": [1, 2, 3, 1, 2], "s": [1.0, 2, 3, 4, 5]})
    table = read_table(write_csv(tmp_path, df), ColumnMap(lot="unit", time="cycle"))
    assert table.numeric_time and table.lots == ["1", "2"] and table.sensors == ("s",)


def test_long_layout_errors(tmp_path: Path) -> None:
    long = pd.DataFrame(
        {
            "lot": ["A", "A", "A"],
            "timestamp": ["2026-03-02T06:00:00Z"] * 3,
            "sensor": ["temp", "temp", "pres"],
            "value": [1.0, 2.0, 3.0],
        }
    )
    cols = ColumnMap(lot="lot", time="timestamp", layout="long")
    with pytest.raises(
        DataError,
        match=r"lot A: sensor 'temp' has two readings at .* \(long.csv line 2 and long.csv line 3\)",
    ):
        read_table(write_csv(tmp_path, long, "long.csv"), cols)
    long["value"] = long["value"].astype(object)
    long.loc[1, "value"] = "x"
    with pytest.raises(DataError, match=r"long.csv line 3 \(lot A\): column 'value' holds 'x'"):
        read_table(write_csv(tmp_path, long, "long.csv"), cols)


def test_unknown_file_type_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "data.xlsx").write_bytes(b"PK")
    with pytest.raises(DataError, match="data.xlsx: unknown file type"):
        read_table(tmp_path / "data.xlsx", COLS)
    with pytest.raises(DataError, match="data file not found"):
        read_table(tmp_path / "nope.csv", COLS)


def test_corrupt_parquet_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match="cannot read bad.parquet as Parquet"):
        read_table(tmp_path / "bad.parquet", COLS)


def test_column_map_validation() -> None:
    with pytest.raises(ValueError, match="column 'x' is mapped twice: as target and as sensor"):
        ColumnMap(lot="lot", time="t", targets="x", sensors=("x", "y"))
    with pytest.raises(ValueError, match="layout must be"):
        ColumnMap(lot="lot", time="t", layout="tall")  # type: ignore[arg-type]


def test_no_warning_for_clean_input(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_table(write_csv(tmp_path, wide_frame()), COLS)


# ---------------------------------------------------------------- times not in ISO 8601


def _times_frame(times: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"lot": "A", "time": times, "temp": np.arange(len(times), dtype=float)})


def test_a_day_first_month_first_ambiguity_is_refused() -> None:
    """01.02.2026 is 1 February in Europe and 2 January in the US: never guessed."""
    frame = _times_frame(["01.02.2026 06:00", "02.02.2026 06:00", "03.02.2026 06:00"])
    with pytest.raises(
        DataError, match=r"row 0 of the frame \(lot A\): column 'time' holds '01.02.2026 06:00', which reads as 01 "
        r"February 2026 \(day first\) or 02 January 2026 \(month first\).*time_format"
    ):  # fmt: skip
        read_table(frame, ColumnMap(lot="lot", time="time"))
    cols = ColumnMap(lot="lot", time="time", time_format="%d.%m.%Y %H:%M")
    table = read_table(frame, cols)
    assert table.frame["time"].dt.strftime("%Y-%m-%d").tolist() == [
        "2026-02-01", "2026-02-02", "2026-02-03"
    ]  # fmt: skip
    assert table.columns.time_format == "%d.%m.%Y %H:%M"  # kept for scoring


def test_a_day_past_twelve_settles_the_order() -> None:
    table = read_table(_times_frame(["12.02.2026 06:00", "13.02.2026 06:00"]),
                       ColumnMap(lot="lot", time="time"))  # fmt: skip
    assert table.frame["time"].dt.strftime("%Y-%m-%d").tolist() == ["2026-02-12", "2026-02-13"]
    us = read_table(_times_frame(["02/12/2026 06:00", "02/13/2026 06:00"]),
                    ColumnMap(lot="lot", time="time"))  # fmt: skip
    assert us.frame["time"].dt.strftime("%Y-%m-%d").tolist() == ["2026-02-12", "2026-02-13"]


def test_year_first_times_are_read_year_month_day() -> None:
    table = read_table(_times_frame(["2026/03/02 07:00", "2026/03/03 07:00"]),
                       ColumnMap(lot="lot", time="time"))  # fmt: skip
    assert table.frame["time"].dt.strftime("%Y-%m-%d").tolist() == ["2026-03-02", "2026-03-03"]


def test_time_format_names_a_time_it_cannot_read() -> None:
    cols = ColumnMap(lot="lot", time="time", time_format="%d.%m.%Y %H:%M")
    with pytest.raises(DataError, match=r"cannot parse '2026-02-03T06:00'.*'%d.%m.%Y %H:%M'"):
        read_table(_times_frame(["01.02.2026 06:00", "2026-02-03T06:00"]), cols)
    with pytest.raises(ValueError, match="strptime format"):
        ColumnMap(lot="lot", time="time", time_format="dd.mm.yyyy")


# ------------------------------------------------------- inputs that are not what they seem

SENSORS2 = ColumnMap(lot="lot", time="timestamp", sensors=("temperature_c", "pressure_bar"))


def test_a_column_name_given_twice_in_a_frame_is_refused_with_both_positions() -> None:
    df = wide_frame()
    twice = pd.concat([df[["temperature_c"]] * 0, df], axis=1)  # an all-zero copy first
    with pytest.raises(DataError, match=r"column 'temperature_c' appears twice") as err:
        read_table(twice, SENSORS2)
    assert "positions 0 and 3" in str(err.value) and err.value.column == "temperature_c"


def test_a_csv_header_that_names_a_column_twice_is_refused_as_written(tmp_path: Path) -> None:
    df = wide_frame()
    path = tmp_path / "twice.csv"
    text = df.to_csv(index=False).splitlines()
    text[0] = text[0].replace("pressure_bar", "temperature_c")  # pandas reads it as .1
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(DataError, match=r"twice.csv line 1: column 'temperature_c' appears "
                       r"twice in the header, as fields 3 and 4 \(spreadsheet columns C and D\)"):  # fmt: skip
        read_table(path, ColumnMap(lot="lot", time="timestamp", sensors=("temperature_c",)))


def test_a_parquet_file_with_a_column_name_twice_is_refused(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = wide_frame()
    names = ["lot", "timestamp", "temperature_c", "temperature_c"]
    arrays = [pa.array(df[c]) for c in ("lot", "timestamp", "temperature_c", "pressure_bar")]
    pq.write_table(pa.table(arrays, names=names), tmp_path / "twice.parquet")
    with pytest.raises(DataError, match=r"twice.parquet: column 'temperature_c' appears twice"):
        read_table(tmp_path / "twice.parquet", ColumnMap("lot", "timestamp"))


def test_a_header_renamed_by_pandas_is_refused_when_the_model_reads_the_name() -> None:
    df = wide_frame().rename(columns={"pressure_bar": "temperature_c.1"})
    with pytest.raises(DataError, match=r"'temperature_c' and 'temperature_c.1' .* names "
                       r"'temperature_c' twice"):  # fmt: skip
        read_table(df, ColumnMap(lot="lot", time="timestamp", sensors=("temperature_c",)))
    with pytest.raises(DataError, match=r"names 'temperature_c' twice"):  # every column read
        read_table(df, ColumnMap(lot="lot", time="timestamp"))
    named = ColumnMap(lot="lot", time="timestamp", sensors=("temperature_c", "temperature_c.1"))
    assert read_table(df, named).sensors == ("temperature_c", "temperature_c.1")


@pytest.mark.parametrize(
    ("values", "shown"),
    [
        (np.array([True, False] * 4), "True"),  # numpy bool, as pandas and Parquet give it
        (pd.array([True, None] * 4, dtype="boolean"), "True"),  # pandas' nullable boolean
        (pd.array([False, True] * 4, dtype="bool[pyarrow]"), "False"),  # Arrow-backed
        (np.array([1.5, 2.0, True, 3.0, 1.0, 2.0, 3.0, 4.0], dtype=object), "True"),  # a bool cell
        (np.array([1 + 0j] * 8), r"\(1\+0j\)"),  # complex: a real part is not a reading
    ],
)
def test_a_sensor_that_is_not_real_numbers_is_refused_from_any_dtype(values, shown) -> None:
    df = wide_frame()
    df["pressure_bar"] = values
    with pytest.raises(DataError, match=rf"row \d of the frame \(lot L1-0001\): column "
                       rf"'pressure_bar' holds {shown}"):  # fmt: skip
        read_table(df, SENSORS2)


def test_a_boolean_sensor_of_a_parquet_file_names_the_file_row_and_lot(tmp_path: Path) -> None:
    df = wide_frame()
    df["pressure_bar"] = df["pressure_bar"] > 2.15
    df.iloc[4:].to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"b.parquet row 0 \(lot L1-0002\): column 'pressure_bar' "
                       r"holds False, a true/false value"):  # fmt: skip
        read_table(tmp_path / "b.parquet", SENSORS2)


def test_a_boolean_target_is_a_pass_fail_label_in_every_format(tmp_path: Path) -> None:
    df = wide_frame()
    df["quality"] = [True, False] * 4
    cols = ColumnMap(lot="lot", time="timestamp", targets="quality", sensors=("temperature_c",))
    from_frame = read_table(df, cols).frame["quality"].tolist()
    from_csv = read_table(write_csv(tmp_path, df), cols).frame["quality"].tolist()  # 'True'
    assert from_frame == from_csv == [1.0, 0.0] * 4


def test_a_boolean_value_column_of_a_long_table_is_refused() -> None:
    long = pd.DataFrame({"lot": "A", "t": [1, 1, 2], "sensor": ["x", "y", "x"]})
    long["value"] = [True, False, True]
    with pytest.raises(DataError, match=r"row 0 of the frame \(lot A\): column 'value' holds True"):
        read_table(long, ColumnMap("lot", "t", layout="long"))


@pytest.mark.parametrize(
    "source",
    [
        lambda tmp: wide_frame().iloc[:0],  # a header-only frame
        lambda tmp: pd.DataFrame(),  # not even columns
        lambda tmp: write_csv(tmp, wide_frame().iloc[:0], "header.csv"),  # a header-only file
    ],
)
def test_an_input_without_rows_is_refused_in_words(tmp_path: Path, source) -> None:
    with pytest.raises(DataError, match=r"no rows to read"):
        read_table(source(tmp_path), COLS)


def test_a_quoted_line_break_counts_as_a_line_of_the_file(tmp_path: Path) -> None:
    df = wide_frame()
    df["note"] = ["", "two\nlines", "", "", "", "", "", ""]  # row 1 takes lines 3 and 4
    df["pressure_bar"] = df["pressure_bar"].astype(object)
    df.loc[5, "pressure_bar"] = "err"  # the 6th record: line 8 of the file, not 7
    path = write_csv(tmp_path, df)
    with pytest.raises(DataError, match=r"sensors.csv line 8 \(lot L1-0002\)") as err:
        read_table(path, SENSORS2)
    assert (err.value.file, err.value.line) == ("sensors.csv", 8)
    assert path.read_text().splitlines()[7].split(",")[3] == "err"  # line 8 as an editor shows


def test_blank_lines_count_as_lines_of_the_file(tmp_path: Path) -> None:
    df = wide_frame()
    df["pressure_bar"] = df["pressure_bar"].astype(object)
    df.loc[5, "pressure_bar"] = "err"
    lines = df.to_csv(index=False).splitlines()
    path = tmp_path / "gaps.csv"
    path.write_text("\n".join([*lines[:3], "", "", *lines[3:]]) + "\n")  # two blank lines
    with pytest.raises(DataError, match=r"gaps.csv line 9 \(lot L1-0002\)"):
        read_table(path, SENSORS2)
    assert (
        len(read_table(path, ColumnMap("lot", "timestamp", sensors=("temperature_c",))).frame) == 8
    )


def test_rows_read_from_files_are_named_by_their_file_and_line() -> None:
    df = wide_frame()
    df["pressure_bar"] = df["pressure_bar"].astype(object)
    df.loc[6, "pressure_bar"] = "err"
    df["_file"], df["_line"] = ["a.csv"] * 4 + ["b.parquet"] * 4, [2, 3, 4, 5, 0, 1, 2, 3]
    with pytest.raises(DataError, match=r"^b.parquet row 2 \(lot L1-0002\)") as err:
        read_table(df, SENSORS2)
    assert (err.value.file, err.value.line, err.value.lot) == ("b.parquet", 2, "L1-0002")
    df["_file"] = None  # rows of an earlier frame: _line is their position there
    df["_line"] = np.arange(40, 48)
    with pytest.raises(DataError, match=r"^row 46 of the frame \(lot L1-0002\)") as err:
        read_table(df, SENSORS2)
    assert (err.value.row, err.value.file) == (46, None)


def test_a_key_that_changes_within_a_lot_names_the_line_where_it_changes(tmp_path: Path) -> None:
    df = wide_frame()
    df["line"] = ["L1", "L1", "L2", "L1", "L1", "L1", "L1", "L1"]
    cols = ColumnMap(lot="lot", time="timestamp", keys=("line",), sensors=("temperature_c",))
    with pytest.raises(DataError, match=r"from 'L1' to 'L2' at sensors.csv line 4"):
        read_table(write_csv(tmp_path, df), cols)


def test_unread_sensors_are_listed_per_lot() -> None:
    df = wide_frame()
    df.loc[df["lot"] == "L1-0002", "pressure_bar"] = np.nan
    assert read_table(df, SENSORS2).unread_sensors() == {"L1-0002": ("pressure_bar",)}
