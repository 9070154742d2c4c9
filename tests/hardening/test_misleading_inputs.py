"""Inputs that are not what they seem: a column named twice, true/false or text where a
reading belongs, no rows at all, a sensor without a single reading; and every message about
a row names the file's line (or the row of the frame), however the rows were cut into lots.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mfgtx
from mfgtx.cli import main
from mfgtx.data import DataError, DataWarning
from tests.cli.conftest import summary


@pytest.fixture(scope="module")
def predictor(quality_bundle):
    return mfgtx.load(str(quality_bundle[1]))


def _frame(plant: Path) -> pd.DataFrame:
    return pd.read_csv(plant / "sensors.csv")  # numbers as numbers, as a Python user has them


def _text(plant: Path) -> pd.DataFrame:
    return pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)


def _lots(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["lot"]))


def _score(capsys, job: Path, source: Path, out: Path) -> tuple[int, dict, pd.DataFrame | None]:
    code = main(
        ["score", str(job), "--set", f"score.source={{path: {source}}}",
         "--set", f"score.output.path={out}"]
    )  # fmt: skip
    result = summary(capsys.readouterr().out)
    errors = pd.read_csv(result["errors_file"]) if result.get("errors_file") else None
    return code, result, errors


# --------------------------------------------------------------- a column named twice


def test_predict_refuses_a_column_named_twice_naming_both_positions(predictor, plant) -> None:
    df = _frame(plant)
    twice = pd.concat([df[["temperature_c"]] * 0, df], axis=1)  # an all-zero copy first
    for call in (predictor.predict, predictor.windows, predictor.score):
        with pytest.raises(DataError, match=r"column 'temperature_c' appears twice, at "
                           r"positions 0 and 4"):  # fmt: skip
            call(twice)


def test_predict_refuses_a_header_pandas_renamed(predictor, plant, tmp_path) -> None:
    df = _text(plant)
    df.insert(3, "zero", "0")  # an all-zero temperature_c before the real one
    text = df.to_csv(index=False).replace("zero", "temperature_c", 1)
    (tmp_path / "twice.csv").write_text(text)
    frame = pd.read_csv(tmp_path / "twice.csv")  # temperature_c (zeros), temperature_c.1
    with pytest.raises(DataError, match=r"'temperature_c' and 'temperature_c.1' \(positions 3 "
                       r"and 4, counting from 0\) look like a header that names"):  # fmt: skip
        predictor.predict(frame)


# ------------------------------------------------- true/false or text where a reading belongs


@pytest.mark.parametrize(
    "as_bool",
    [
        lambda s: s > 5.0,  # numpy bool
        lambda s: (s > 5.0).astype("boolean"),  # pandas' nullable boolean
        lambda s: (s > 5.0).astype(object),  # Python bools in an object column
    ],
)
def test_predict_refuses_true_false_readings_of_any_dtype(predictor, plant, as_bool) -> None:
    df = _frame(plant)
    df["pressure_bar"] = as_bool(df["pressure_bar"])
    with pytest.raises(DataError, match=r"row 0 of the frame \(lot L1-0001\): column "
                       r"'pressure_bar' holds (True|False), a true/false value") as err:  # fmt: skip
        predictor.predict(df)
    assert (err.value.column, err.value.lot) == ("pressure_bar", "L1-0001")


def test_a_score_job_lists_each_lot_of_a_boolean_parquet_sensor(
    quality_bundle, plant, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    df = _frame(plant)
    df["pressure_bar"] = df["pressure_bar"] > 5.0
    df.to_parquet(tmp_path / "in.parquet")
    code, result, _ = _score(capsys, job, tmp_path / "in.parquet", tmp_path / "s.parquet")
    assert code != 0 and "nothing could be scored" in result["error"]  # scored 0/1 before
    errors = pd.read_csv(tmp_path / "s.errors.csv")
    assert len(errors) == len(_lots(df)) and set(errors["column"]) == {"pressure_bar"}
    first = errors.set_index("lot").loc[_lots(df)[1]]
    line = int(df.index[df["lot"] == _lots(df)[1]][0])  # its first row of the file
    assert first["reason"].startswith(f"in.parquet row {line} ")
    assert (first["file"], int(first["line"])) == ("in.parquet", line)


# ----------------------------------------------------------------------- no rows at all


@pytest.mark.parametrize("call", ["predict", "score", "windows", "explain"])
def test_every_entry_point_refuses_a_frame_without_rows_in_words(predictor, plant, call) -> None:
    empty = _frame(plant).iloc[:0]
    with pytest.raises(DataError, match=r"no rows to score"):
        getattr(predictor, call)(empty)
    with pytest.raises(DataError, match=r"no rows to score \(it has no columns"):
        getattr(predictor, call)(pd.DataFrame())


def test_explain_refuses_a_window_the_rows_do_not_give(predictor, plant) -> None:
    df = _frame(plant)
    lot = df[df["lot"] == _lots(df)[0]]
    n = len(predictor.windows(lot, stride=1))
    with pytest.raises(DataError, match=rf"no window {n + 5} to explain: the data gives {n} "):
        predictor.explain(lot, window=n + 5)


def test_predict_says_what_it_scores_when_given_no_frame(predictor, plant) -> None:
    with pytest.raises(TypeError, match=r"scores a DataFrame of sensor rows, found list"):
        predictor.predict(_frame(plant).to_dict("records"))


# --------------------------------------------------------- a sensor without a single reading


def test_a_lot_without_a_reading_of_a_sensor_is_scored_with_a_warning(predictor, plant) -> None:
    df = _frame(plant)
    lot = _lots(df)[2]
    df.loc[df["lot"] == lot, "temperature_c"] = np.nan
    with pytest.warns(DataWarning, match=rf"no reading of temperature_c in 1 lot\(s\) \({lot}\)"):
        scored = predictor.score(df)
    assert lot in set(scored.rows["lot"]) and not scored.errors  # the model masks it
    (note,) = scored.warnings
    first = int(df.index[df["lot"] == lot][0])
    assert (note["lot"], note["column"], note["line"]) == (lot, "temperature_c", None)
    assert note["reason"].startswith("no reading of temperature_c in this lot; scored with it")
    assert f"rows {first} to {first + 199} of the frame" in note["reason"]


def test_a_score_job_writes_a_warning_row_per_lot_without_a_reading(
    quality_bundle, plant, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    df = _text(plant)
    df["vibration_mm_s"] = ""  # no reading in the whole file
    df.to_csv(tmp_path / "in.csv", index=False)
    code, result, errors = _score(capsys, job, tmp_path / "in.csv", tmp_path / "s.parquet")
    assert code == 0 and result["bad_lots"] == 0 and result["warnings"] == len(_lots(df))
    assert list(errors["lot"]) == _lots(df) and set(errors["column"]) == {"vibration_mm_s"}
    assert errors["reason"].str.contains("no reading of vibration_mm_s in this lot; scored "
                                         "with it missing").all()  # fmt: skip
    starts = [int(df.index[df["lot"] == lot][0]) + 2 for lot in _lots(df)]
    assert errors["line"].astype(int).tolist() == starts and set(errors["file"]) == {"in.csv"}
    assert set(pd.read_parquet(tmp_path / "s.parquet")["lot"]) == set(_lots(df))


# ---------------------------------------------------- the file's line in every row message


def test_predict_names_the_row_of_the_frame_not_of_its_lot(predictor, plant) -> None:
    df = _frame(plant)
    lot = _lots(df)[3]
    i = int(df.index[df["lot"] == lot][39])
    df["pressure_bar"] = df["pressure_bar"].astype(object)
    df.loc[i, "pressure_bar"] = "hot"
    df.index = df.index + 1000  # index labels are not positions: the position is named
    with pytest.raises(DataError, match=rf"^row {i} of the frame \(lot {lot}\): column "
                       r"'pressure_bar' holds 'hot'"):  # fmt: skip
        predictor.predict(df)


def test_score_names_the_file_line_in_messages_that_name_two_rows(predictor, plant) -> None:
    df = _frame(plant)
    lot = _lots(df)[1]
    i = int(df.index[df["lot"] == lot][20])
    df.loc[i + 1, "timestamp"] = df.loc[i, "timestamp"]  # two rows at one time
    positions = pd.DataFrame({"file": "export.csv", "line": np.arange(len(df)) * 2 + 7})
    scored = predictor.score(df, positions=positions)
    (err,) = scored.errors
    a, b = i * 2 + 7, (i + 1) * 2 + 7
    assert f"(export.csv line {a} and export.csv line {b})" in err["reason"]
    assert (err["lot"], err["file"], err["line"]) == (lot, "export.csv", b)


def test_a_score_job_names_the_line_where_a_key_changes_within_a_lot(
    quality_bundle, plant, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    df = _text(plant)
    lot = _lots(df)[2]
    i = int(df.index[df["lot"] == lot][5])
    df.loc[i, "line"] = "L9"
    df.to_csv(tmp_path / "in.csv", index=False)
    code, _, errors = _score(capsys, job, tmp_path / "in.csv", tmp_path / "s.parquet")
    row = errors.set_index("lot").loc[lot]
    assert code == 0 and (row["file"], int(row["line"])) == ("in.csv", i + 2)
    assert f"from 'L1' to 'L9' at in.csv line {i + 2}" in row["reason"]


def test_training_names_the_file_line_of_a_bad_value(plant, tmp_path) -> None:
    from mfgtx.jobfile.prepare import read_windows
    from mfgtx.jobs import load_config
    from mfgtx.kinds import SENSOR
    from tests.cli.conftest import quality_job, write_job

    df = _text(plant)
    i = int(df.index[df["lot"] == _lots(df)[-1]][3])  # in the last chunk
    df.loc[i, "temperature_c"] = "hot"
    df.to_csv(tmp_path / "in.csv", index=False)
    spec = quality_job(plant, tmp_path)
    spec["data"]["source"] = {"path": str(tmp_path / "in.csv"), "chunk_rows": 300}
    lot = _lots(df)[-1]
    left_out: list[dict] = []  # training leaves the lot out and lists it (issue 37)
    with pytest.warns(DataWarning, match=r"1 lot\(s\) left out for bad values"):
        windows, _ = read_windows(
            load_config(write_job(tmp_path / "job.yaml", spec)), SENSOR, left_out=left_out
        )
    assert [(r["file"], r["line"], r["lot"]) for r in left_out] == [("in.csv", i + 2, lot)]
    assert str(left_out[0]["reason"]).startswith(f"in.csv line {i + 2} (lot {lot})")
    assert lot not in {str(x) for x in windows.lots}
