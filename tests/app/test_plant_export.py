"""A German line's export read one way by every entry point (issue 37).

The export is written as the plant writes it: ``;`` between values, decimal commas, cp1252,
``Charge`` (lot), ``Zeitstempel`` as ``dd.mm.yyyy HH:MM:SS`` with days above 12 and an
ambiguous ``02.03``, ``Massetemp_°C``, and ``Ergebnis`` as ``i.O.`` / ``n.i.O.``. The job
says so once (``data.source``, ``data.columns.time_format``, the top-level ``labels``); the
bundle keeps it (its read options), so scoring a second file that repeats none of it,
``mfgtx.load(bundle).predict("export.csv")`` and the dashboard's uploads read the same dates.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

import mfgtx
from mfgtx.data import ColumnMap, DataError, read_table
from mfgtx.jobs import load_config, score, train

from .conftest import MAIN, SAMPLE
from .test_dashboard import _clean, _texts

#: The sample plant's sensors as the German line names them.
GERMAN = {
    "temperature_c": "Massetemp_°C",
    "pressure_bar": "Druck_bar",
    "vibration_mm_s": "Vibration_mm_s",
    "motor_current_a": "Motorstrom_A",
}
FORMAT = "%d.%m.%Y %H:%M:%S"


def _export(lots: list[str], days: list[int], rows: int) -> tuple[pd.DataFrame, bytes]:
    """The sample's ``lots`` as the German export (bytes) and its true rows: lot ``k`` runs
    one reading a minute from 06:00 on ``days[k]`` March 2026."""
    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    passed = pd.read_csv(SAMPLE / "quality.csv").set_index("lot")["passed"]
    parts = []
    for lot, day in zip(lots, days, strict=True):
        part = sensors[sensors["lot"] == lot].head(rows).copy()
        part["timestamp"] = pd.date_range(f"2026-03-{day:02d} 06:00", periods=len(part), freq="min")
        part["Ergebnis"] = "i.O." if passed[lot] else "n.i.O."
        parts.append(part)
    true = pd.concat(parts, ignore_index=True)
    german = true.rename(columns={"line": "Linie", "lot": "Charge", "timestamp": "Zeitstempel",
                                  **GERMAN})  # fmt: skip
    german["Zeitstempel"] = german["Zeitstempel"].dt.strftime(FORMAT)
    text = german.to_csv(index=False, sep=";", decimal=",")
    assert "02.03.2026 06:00:00" in text and "13.03.2026" in text and "Massetemp_°C" in text
    return true, text.encode("cp1252")


def _lots() -> tuple[list[str], list[str]]:
    """4 lots per line to train on (12 lots, days 2 to 13 March) and 3 others to score."""
    quality = pd.read_csv(SAMPLE / "quality.csv")
    by_line = quality.groupby("line")["lot"]
    return by_line.nth(list(range(4))).tolist(), by_line.nth(4).tolist()


def _job(folder: Path, **extra: object) -> dict:
    job = {
        "data": {
            "source": {"path": str(folder / "export.csv"), "decimal": ",", "encoding": "cp1252"},
            "pass_column": "Ergebnis",
            "columns": {
                "lot": "Charge",
                "time": "Zeitstempel",
                "time_format": FORMAT,
                "sensors": list(GERMAN.values()),
                "targets": ["defect"],
                "keys": ["Linie"],
                "units": {"Massetemp_°C": "°C"},
            },
        },
        "labels": {"good": ["i.O.", "OK", "pass"], "bad": ["n.i.O.", "NOK", "fail"]},
        "windows": {"window": 40, "stride": 40},
        "split": {"test_size": 3, "val_size": 3, "gap": "0s"},
        "model": {
            "task": "classification",
            "patch_len": 8,
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "dropout": 0.0,
        },
        "train": {
            "epochs": 1,
            "batch_size": 16,
            "patience": None,
            "progress": "off",
            "precision": "fp32",
        },
        "bundle": str(folder / "models" / "german"),
        "score": {
            "source": {"path": str(folder / "second" / "export.csv")},  # no read options
            "output": {"path": str(folder / "scores.parquet")},
        },
    }
    job.update(extra)
    return job


def _write(path: Path, job: dict) -> Path:
    path.write_text(yaml.safe_dump(job, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def plant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The German training export, a second export to score (in its own folder, the
    dashboard's data folder), and a bundle trained on the first."""
    folder = tmp_path_factory.mktemp("german")
    train_lots, score_lots = _lots()
    _, data = _export(train_lots, list(range(2, 14)), rows=120)
    (folder / "export.csv").write_bytes(data)
    true, second = _export(score_lots, [2, 13, 14], rows=60)
    (folder / "second").mkdir()
    (folder / "second" / "export.csv").write_bytes(second)
    true.to_parquet(folder / "second_true.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split's purge warning on a dozen lots
        train("sensor", load_config(_write(folder / "job.yaml", _job(folder))))
    return folder


def test_the_bundle_keeps_how_the_plant_writes_its_files(plant: Path) -> None:
    predictor = mfgtx.load(plant / "models" / "german")
    read = predictor.read_options
    assert (read.delimiter, read.decimal, read.encoding) == ("auto", ",", "cp1252")
    assert read.time_format == FORMAT
    assert read.labels.good == ("i.O.", "OK", "pass") and read.labels.bad[0] == "n.i.O."


def test_score_of_a_second_file_inherits_the_read_options_and_predict_reads_a_path(
    plant: Path, tmp_path: Path
) -> None:
    true = pd.read_parquet(plant / "second_true.parquet")
    score(load_config(plant / "job.yaml"))  # score.source gives no read options
    scored = pd.read_parquet(plant / "scores.parquet")
    ends = true.groupby("lot")["timestamp"].max()
    want = ends.dt.strftime("%Y-%m-%dT%H:%M:%S").sort_values().tolist()
    got = scored.groupby("lot")["window_end"].max().sort_values().tolist()
    assert [g[:19] for g in got] == want  # 2 March (not 3 February), 13 and 14 March

    # a scoring job that names no data section: the bundle's own read options
    bare = {"bundle": str(plant / "models" / "german"),
            "score": {"source": {"path": str(plant / "second" / "export.csv")},
                      "output": {"path": str(tmp_path / "bare.parquet")}}}  # fmt: skip
    score(load_config(_write(tmp_path / "bare.yaml", bare)))
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "bare.parquet"), scored)

    predictor = mfgtx.load(plant / "models" / "german")
    for path in (str(plant / "second" / "export.csv"), plant / "second" / "export.csv"):
        rows = predictor.predict(path)
        pd.testing.assert_frame_equal(rows, scored, check_dtype=False)


def test_plant_words_unknown_to_the_job_are_refused_naming_labels(plant: Path, tmp_path) -> None:
    job = _job(plant, bundle=str(tmp_path / "refused"))
    del job["labels"]  # the defaults: true/pass/yes and false/fail/no
    with pytest.raises(DataError) as caught:
        train("sensor", load_config(_write(tmp_path / "job.yaml", job)))
    text = str(caught.value)
    assert "export.csv line 2" in text and "(lot L1-0001)" in text, text
    assert "column 'Ergebnis' holds 'i.O.'" in text
    assert "good ['true', 'pass', 'yes'], bad ['false', 'fail', 'no']" in text
    assert "top-level key labels" in text.split("good [")[1]
    assert caught.value.line == 2 and caught.value.column == "Ergebnis"


def test_a_word_on_both_sides_is_refused(plant: Path, tmp_path: Path) -> None:
    from mfgtx.jobs import ConfigError

    job = _job(plant, labels={"good": ["i.O.", "OK"], "bad": ["n.i.O.", "ok"]})
    with pytest.raises(ConfigError, match=r"labels: 'ok' is both a good and a bad word"):
        load_config(_write(tmp_path / "job.yaml", job))


def test_without_a_time_format_02_03_is_refused_with_both_readings(plant: Path) -> None:
    frame = pd.read_csv(plant / "second" / "export.csv", sep=";", decimal=",", encoding="cp1252")
    cols = ColumnMap(lot="Charge", time="Zeitstempel", sensors=tuple(GERMAN.values()))
    with pytest.raises(DataError, match=r"'02.03.2026 06:00:00', which reads as 02 March 2026 "
                                        r"\(day first\) or 03 February 2026"):  # fmt: skip
        read_table(frame[frame["Zeitstempel"].str.startswith("02.03")], cols)


def test_a_time_zone_reads_naive_times_on_that_clock_and_refuses_a_skipped_hour() -> None:
    frame = pd.DataFrame({"lot": ["A", "A"], "t": ["13.03.2026 06:00:00", "13.03.2026 06:01:00"],
                          "x": [1.0, 2.0]})  # fmt: skip
    cols = ColumnMap(lot="lot", time="t", time_format=FORMAT, time_zone="Europe/Berlin")
    table = read_table(frame, cols)
    assert table.frame["t"].iloc[0] == pd.Timestamp("2026-03-13 05:00", tz="UTC")
    assert table.time_kind == "utc"
    skipped = frame.assign(t=["29.03.2026 02:30:00", "29.03.2026 03:30:00"])
    with pytest.raises(DataError, match=r"row 0 .*skipped or shown twice .*Europe/Berlin"):
        read_table(skipped, cols)
    with pytest.raises(ValueError, match="not an IANA time zone"):
        ColumnMap(lot="lot", time="t", time_zone="Berlin")


# ------------------------------------------------------------------ the dashboard


@pytest.fixture
def german_app(plant: Path, monkeypatch: pytest.MonkeyPatch, app_env: Path, tmp_path: Path):
    models = tmp_path / "models"
    shutil.copytree(plant / "models" / "german", models / "german")
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(models))
    monkeypatch.setenv("MFGTX_DATA_DIR", str(plant / "second"))
    return plant


def _x_dates(at: AppTest) -> list[str]:
    """The first and last x of the sensor chart, as plotly holds them."""
    for spec in (json.loads(e.proto.spec) for e in at.get("plotly_chart")):
        xs = spec["data"][0].get("x")
        if isinstance(xs, list) and xs and isinstance(xs[0], str) and xs[0][:4] == "2026":
            return [xs[0][:10], xs[-1][:10]]
    raise AssertionError("no sensor chart on a time axis")


def test_quality_page_draws_and_writes_the_true_dates_of_an_upload(german_app: Path) -> None:
    data = (german_app / "second" / "export.csv").read_bytes()
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page("views/quality.py").run()
    _clean(at)  # the data folder's file (the same export) is read the bundle's way
    at.file_uploader(key="quality_upload").set_value(("export.csv", data, "text/csv")).run()
    _clean(at)
    problems = [t for t in _texts(at.error) if not t.startswith("**How far to trust")]
    assert not problems, problems  # a red trust box is the verdict, not a problem
    assert at.selectbox(key="quality_csv_decimal").value == ","  # the bundle's options
    assert at.selectbox(key="quality_csv_encoding").value == "cp1252"
    _, score_lots = _lots()
    for lot, day in zip(score_lots, ["2026-03-02", "2026-03-13", "2026-03-14"], strict=True):
        at.selectbox(key="quality_line").set_value(lot.split("-")[0]).run()
        at.selectbox(key="quality_lot").set_value(lot).run()
        _clean(at)
        assert _x_dates(at) == [day, day], lot
        captions = " ".join(_texts(at.caption))
        assert f"ending {day} 06:59 UTC" in captions, captions


def test_quality_page_refuses_an_ambiguous_column_without_a_time_format(
    german_app: Path, tmp_path: Path
) -> None:
    from tests.hardening.test_signing import _reforge

    models = tmp_path / "models"

    def no_format(manifest):
        manifest["input_spec"]["columns"].pop("time_format")
        manifest["input_spec"]["read"]["time_format"] = None

    _reforge(models / "german", no_format)
    true = pd.read_parquet(german_app / "second_true.parquet")
    first = true[true["lot"] == true["lot"].iloc[0]]  # 02.03 only: reads both ways
    german = first.rename(columns={"line": "Linie", "lot": "Charge", "timestamp": "Zeitstempel",
                                   **GERMAN})  # fmt: skip
    german["Zeitstempel"] = german["Zeitstempel"].dt.strftime(FORMAT)
    data = german.to_csv(index=False, sep=";", decimal=",").encode("cp1252")
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page("views/quality.py").run()
    at.file_uploader(key="quality_upload").set_value(("export.csv", data, "text/csv")).run()
    _clean(at)
    errors = " ".join(_texts(at.error))
    assert "02 March 2026 (day first) or 03 February 2026 (month first)" in errors, errors
    assert "time_format" in errors
    assert not at.get("plotly_chart")


def test_score_page_writes_the_true_dates_of_an_upload(german_app: Path) -> None:
    data = (german_app / "second" / "export.csv").read_bytes()
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page("views/score.py").run()
    at.file_uploader(key="score_csv").set_value(("export.csv", data, "text/csv")).run()
    assert at.selectbox(key="score_csv_decimal").value == ","
    at.button(key="score_go").click().run()
    _clean(at)
    problems = [t for t in _texts(at.error) if not t.startswith("**How far to trust")]
    assert not problems, problems  # a red trust box is the verdict, not a problem
    rows = at.dataframe[0].value
    got = sorted(str(t)[:10] for t in rows["window_end"])
    assert got == ["2026-03-02", "2026-03-13", "2026-03-14"], rows


def test_a_read_option_a_source_gives_wins_over_the_inherited_one() -> None:
    from mfgtx.data.io import CsvFormat
    from mfgtx.jobfile.config import SourceSection

    bundle = CsvFormat(delimiter=";", decimal=",", encoding="cp1252")
    own = SourceSection(path="next.csv", encoding="utf-8").inheriting(bundle)
    assert (own.delimiter, own.decimal, own.encoding) == (";", ",", "utf-8")
    sql = SourceSection(url="sqlite:///plant.db", table="rows")
    assert sql.inheriting(bundle) is sql  # a SQL source has no CSV options


def test_a_label_known_at_lot_end_reads_the_plants_time_format() -> None:
    from mfgtx.jobfile.config import ColumnsSection, DataSection, SourceSection
    from mfgtx.jobfile.sources import prepare

    data = DataSection(
        source=SourceSection(path="export.csv"),
        columns=ColumnsSection(
            lot="Charge", time="Zeitstempel", time_format=FORMAT, label_time="bekannt"
        ),
        label_known="lot_end",
    )
    frame = pd.DataFrame({"Charge": ["A", "A", "B"], "x": [1.0, 2.0, 3.0],
                          "Zeitstempel": ["02.03.2026 06:00:00", "13.03.2026 06:00:00",
                                          "14.03.2026 07:00:00"]})  # fmt: skip
    known = prepare(frame, data)["bekannt"]
    assert known.dt.strftime("%d.%m").tolist() == ["13.03", "13.03", "14.03"]
    table = read_table(prepare(frame, data), data.column_map())
    assert (table.frame["bekannt"] >= table.frame["Zeitstempel"]).all()


@pytest.mark.parametrize("name", ["sensor", "forecast_direct"])
def test_a_bundle_written_before_read_options_reads_with_the_defaults(name: str) -> None:
    from mfgtx.data.read_options import ReadOptions

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "bundles_66eb24c" / name
    predictor = mfgtx.load(fixture)
    assert "read" not in predictor.bundle.input_spec
    assert predictor.read_options == ReadOptions()


def test_evaluate_of_a_second_file_inherits_the_read_options(plant: Path, tmp_path: Path) -> None:
    from mfgtx.jobs.evaluate import evaluate

    job = _job(plant, evaluate={"source": {"path": str(plant / "second" / "export.csv")}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a dozen lots: the split's purge warning
        found, report = evaluate(load_config(_write(tmp_path / "evaluate.yaml", job)))
    assert found["external"]["lots_in_source"] == 3 and report.n_test > 0, found
