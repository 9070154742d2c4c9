"""One bad value goes to the errors file with its lot and line; the rest is still scored."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mfgtx.cli import main
from mfgtx.data import ColumnMap, DataError, read_table
from tests.cli.conftest import summary

SENSORS = ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")


def _rows(plant: Path) -> pd.DataFrame:
    return pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)


def _score(capsys, job: Path, source: Path, out: Path) -> tuple[int, dict, pd.DataFrame | None]:
    code = main(
        ["score", str(job), "--set", f"score.source={{path: {source}}}",
         "--set", f"score.output.path={out}"]
    )  # fmt: skip
    captured = capsys.readouterr()
    result = summary(captured.out)
    errors = pd.read_csv(result["errors_file"]) if result.get("errors_file") else None
    return code, result, errors


def _lots(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["lot"]))


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("1e300", "beyond the +/-3.4e+38 a model can read"),
        ("-1e39", "beyond the +/-3.4e+38"),
    ],
)
def test_a_value_beyond_float32_is_an_error_of_its_lot(
    quality_bundle, plant, tmp_path, capsys, value, reason
) -> None:
    job, _ = quality_bundle
    df = _rows(plant)
    lot = _lots(df)[1]
    i = df.index[df["lot"] == lot][7]
    df.loc[i, "pressure_bar"] = value
    source = tmp_path / "in.csv"
    df.to_csv(source, index=False)
    code, result, errors = _score(capsys, job, source, tmp_path / "s.parquet")
    assert code == 0 and result["bad_lots"] == 1
    row = errors.set_index("lot").loc[lot]
    assert reason in row["reason"] and int(row["line"]) == i + 2 and row["column"] == "pressure_bar"
    scored = pd.read_parquet(tmp_path / "s.parquet")
    assert lot not in set(scored["lot"]) and len(set(scored["lot"])) == len(_lots(df)) - 1


def test_a_year_9999_timestamp_is_an_error_of_its_lot(quality_bundle, plant, tmp_path, capsys):
    job, _ = quality_bundle
    df = _rows(plant)
    lot = _lots(df)[2]
    i = df.index[df["lot"] == lot][-1]
    df.loc[i, "timestamp"] = "9999-12-31T23:59:00+00:00"
    source = tmp_path / "in.csv"
    df.to_csv(source, index=False)
    code, result, errors = _score(capsys, job, source, tmp_path / "s.parquet")
    assert code == 0 and result["bad_lots"] == 1
    assert "outside the years 1900-2199" in errors.set_index("lot").loc[lot, "reason"]


def test_a_header_only_file_in_a_folder_is_listed_and_the_rest_scored(
    quality_bundle, plant, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    folder = tmp_path / "export"
    folder.mkdir()
    df = _rows(plant)
    df.to_csv(folder / "a.csv", index=False)
    (folder / "b.csv").write_text(",".join(df.columns) + "\n")  # the header only
    code, _result, errors = _score(capsys, job, folder, tmp_path / "s.parquet")
    assert code == 0
    assert errors["file"].tolist() == ["b.csv"] and "holds no rows" in errors["reason"].iloc[0]
    assert len(set(pd.read_parquet(tmp_path / "s.parquet")["lot"])) == len(_lots(df))


def test_a_header_only_file_alone_is_bad_input_not_a_crash(quality_bundle, plant, tmp_path, capsys):
    job, _ = quality_bundle
    source = tmp_path / "empty.csv"
    source.write_text(",".join(_rows(plant).columns) + "\n")
    code, result, _ = _score(capsys, job, source, tmp_path / "s.parquet")
    assert code == 2 and "nothing could be scored" in result["error"]
    assert "out-of-bounds" not in result["error"]


def test_naive_times_among_zoned_lots_are_an_error_of_that_lot(
    quality_bundle, plant, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    df = _rows(plant)
    lot = _lots(df)[0]
    naive = df["lot"] == lot
    df.loc[naive, "timestamp"] = df.loc[naive, "timestamp"].str.replace("+00:00", "", regex=False)
    source = tmp_path / "in.csv"
    df.to_csv(source, index=False)
    code, result, errors = _score(capsys, job, source, tmp_path / "s.parquet")
    assert code == 0 and result["bad_lots"] == 1
    reason = errors.set_index("lot").loc[lot, "reason"]
    assert "timestamps without a zone offset" in reason and "trained on timestamps with" in reason


def test_epoch_second_times_are_an_error_not_cycle_numbers(quality_bundle, plant, tmp_path, capsys):
    job, _ = quality_bundle
    df = _rows(plant)
    lot = _lots(df)[0]
    part = df["lot"] == lot
    stamps = pd.to_datetime(df.loc[part, "timestamp"], utc=True)
    seconds = (stamps - pd.Timestamp("1970-01-01", tz="UTC")) // pd.Timedelta(seconds=1)
    df.loc[part, "timestamp"] = seconds.astype(str)
    source = tmp_path / "in.csv"
    df.to_csv(source, index=False)
    code, result, errors = _score(capsys, job, source, tmp_path / "s.parquet")
    assert code == 0 and result["bad_lots"] == 1
    assert "numbers as times" in errors.set_index("lot").loc[lot, "reason"]
    scored = pd.read_parquet(tmp_path / "s.parquet")
    assert not scored["window_end"].str.match(r"^\d+\.0$").any()


def test_a_row_without_a_lot_id_is_listed_never_dropped(quality_bundle, plant, tmp_path, capsys):
    job, _ = quality_bundle
    df = _rows(plant)
    i = df.index[df["lot"] == _lots(df)[3]][10]
    df.loc[i, "lot"] = ""
    source = tmp_path / "in.csv"
    df.to_csv(source, index=False)
    code, _result, errors = _score(capsys, job, source, tmp_path / "s.parquet")
    assert code == 0
    blank = errors[errors["lot"].isna()]
    assert len(blank) == 1 and int(blank["line"].iloc[0]) == i + 2
    assert "have no lot id" in blank["reason"].iloc[0]


def test_training_refuses_mixed_time_kinds_across_chunks(plant, tmp_path) -> None:
    from mfgtx.jobfile.prepare import read_windows
    from mfgtx.jobs import load_config
    from mfgtx.kinds import FORECAST
    from tests.cli.conftest import write_job
    from tests.cli.test_jobs_forecast_vit import forecast_job

    df = _rows(plant)
    lot = _lots(df)[-1]
    last = df["lot"] == lot
    df.loc[last, "timestamp"] = df.loc[last, "timestamp"].str.replace("+00:00", "", regex=False)
    source = tmp_path / "in.csv"
    df.to_csv(source, index=False)
    spec = forecast_job(plant, tmp_path)
    spec["data"]["source"] = {"path": str(source), "chunk_rows": 150}
    with pytest.raises(DataError, match=f"lot {lot} has timestamps without a zone offset"):
        read_windows(load_config(write_job(tmp_path / "job.yaml", spec)), FORECAST)


def test_read_table_names_the_cell_beyond_float32() -> None:
    df = pd.DataFrame({"lot": ["A", "A"], "t": [1, 2], "x": ["1.5", "3e38"], "y": ["1", "4e38"]})
    with pytest.raises(
        DataError, match=r"row 1 of the frame \(lot A\): column 'y' holds '4e38', beyond"
    ):
        read_table(df, ColumnMap("lot", "t", sensors=("x", "y")))
