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
        DataError, match=r"row 0 \(lot A\): column 'time' holds '01.02.2026 06:00', which reads as 01 "
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
