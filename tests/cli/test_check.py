"""``mfgtx check`` lists every problem of an export in one run, and training leaves the bad
lots out with an errors file (issue 37: a plant engineer's first day with their own export)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mfgtx.cli import main
from tests.cli.conftest import SENSORS, quality_job, summary, write_job


def _german(plant: Path, folder: Path) -> dict[str, object]:
    """The plant's export written as a German plant writes it (``;``, decimal commas, dates
    ``13.03.2026 06:00``), with one problem of each kind in its own lot: a date that does not
    exist, a text value in a sensor, a label word not understood, a lot too short for a
    window; and a time that goes back (a note: the rows are sorted). Returns the lots of each
    problem and the CSV line of each bad value."""
    sensors = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    quality = pd.read_csv(plant / "quality.csv", dtype=str, keep_default_na=False)
    stamps = pd.to_datetime(sensors["timestamp"], utc=True)
    sensors["timestamp"] = stamps.dt.strftime("%d.%m.%Y %H:%M")
    for c in SENSORS:
        sensors[c] = sensors[c].str.replace(".", ",", regex=False)
    lots = list(pd.unique(sensors["lot"]))
    bad_date, bad_value, bad_label, short, back = lots[0], lots[2], lots[4], lots[6], lots[8]
    at = sensors.index[sensors["lot"] == bad_date][7]
    sensors.loc[at, "timestamp"] = "31.02.2026 07:30"
    at_value = sensors.index[sensors["lot"] == bad_value][12]
    sensors.loc[at_value, "pressure_bar"] = "n/a!"
    rows = sensors.index[sensors["lot"] == back]
    a, b = rows[20], rows[21]
    sensors.loc[[a, b], "timestamp"] = sensors.loc[[b, a], "timestamp"].to_numpy()
    sensors = sensors.drop(sensors.index[sensors["lot"] == short][10:])
    quality.loc[quality["lot"] == bad_label, "passed"] = "unklar"
    quality = quality.drop(columns=["lot_start", "lot_end", "inspected_at"])
    sensors.to_csv(folder / "export.csv", sep=";", index=False)
    quality.to_csv(folder / "quality.csv", sep=";", index=False)
    # a second export with a sensor column missing, for score.source
    sensors.drop(columns=["motor_current_a"]).to_csv(folder / "new.csv", sep=";", index=False)
    line = {  # header = line 1, rows in order
        "date": 2 + list(sensors.index).index(at),
        "value": 2 + list(sensors.index).index(at_value),
        "label": 2 + list(quality["lot"]).index(bad_label),
    }
    return {"date": bad_date, "value": bad_value, "label": bad_label, "short": short,
            "back": back, "line": line}  # fmt: skip


def _job(plant: Path, folder: Path, **sections: object) -> Path:
    job = quality_job(plant, folder, **sections)
    data = job["data"]
    data["source"] = {"path": str(folder / "export.csv"), "decimal": ",", "chunk_rows": 700}
    data["labels"] = {"source": {"path": str(folder / "quality.csv")}, "on": "lot",
                      "columns": ["passed"]}  # fmt: skip
    data["columns"].pop("label_time")
    data["columns"]["time_format"] = "%d.%m.%Y %H:%M"
    job["split"] = {"test_size": 2, "val_size": 2, "gap": "0s"}
    job["score"] = {
        "source": {"path": str(folder / "new.csv"), "decimal": ","},
        "output": {"path": str(folder / "scores.csv")},
    }
    return write_job(folder / "job.yaml", job)


@pytest.fixture
def german(plant: Path, tmp_path: Path) -> tuple[Path, dict[str, object]]:
    lots = _german(plant, tmp_path)
    return _job(plant, tmp_path), lots


def test_check_lists_every_problem_of_an_export_in_one_run(german, capsys) -> None:
    job, lots = german
    errors = job.parent / "problems.csv"
    code = main(["check", str(job), "--errors", str(errors), "--max", "3"])
    out = capsys.readouterr().out
    result = summary(out)
    assert code == 1 and result["ok"] is False, out
    found = pd.read_csv(errors, dtype={"lot": str})
    by_kind = {k: g for k, g in found.groupby("kind")}
    line = lots["line"]
    date = by_kind["bad time"].set_index("lot").loc[lots["date"]]
    assert (date["file"], int(date["line"]), date["found"]) == (
        "export.csv",
        line["date"],
        "31.02.2026 07:30",
    )
    value = by_kind["not a number"].set_index("lot").loc[lots["value"]]
    assert (value["column"], int(value["line"]), value["found"]) == (
        "pressure_bar",
        line["value"],
        "n/a!",
    )
    label = by_kind["label not understood"].set_index("lot").loc[lots["label"]]
    assert (label["file"], int(label["line"]), label["found"]) == (
        "quality.csv",
        line["label"],
        "unklar",
    )
    assert list(by_kind["lot too short"]["lot"]) == [lots["short"]]
    assert list(by_kind["time goes back"]["lot"]) == [lots["back"]]
    assert set(by_kind["time goes back"]["effect"]) == {"note"}
    missing = by_kind["missing column"]
    assert len(missing) == 1 and missing["column"].iloc[0] == "motor_current_a"
    assert missing["source"].iloc[0] == "score.source"
    # the screen: counts per kind first, then a line per problem with its place and lot
    assert result["counts"]["bad time"] == 1 and result["problems"] == len(found)
    assert f"export.csv:{line['date']}" in out and f"quality.csv:{line['label']}" in out
    head = out.index("bad time")
    assert head < out.index(f"export.csv:{line['date']}")


def test_check_json_and_exit_codes(german, plant, tmp_path, capsys) -> None:
    job, lots = german
    assert main(["check", str(job), "--json"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1  # the summary line alone, holding every problem
    problems = json.loads(out[0])["list"]
    assert {lots["date"], lots["value"], lots["label"], lots["short"]} <= {
        p["lot"] for p in problems
    }
    clean = write_job(tmp_path / "clean.yaml", quality_job(plant, tmp_path / "c"))
    code = main(["check", str(clean)])
    result = summary(capsys.readouterr().out)
    assert code == 0 and result["ok"] is True and result["lots"] > 0
    (tmp_path / "broken.yaml").write_text("data: [not, a, section\n")
    assert main(["check", str(tmp_path / "broken.yaml")]) == 2


def test_check_screen_is_bounded_per_kind(plant, tmp_path, capsys) -> None:
    sensors = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    first = sensors.groupby("lot").head(1).index
    sensors.loc[first, "pressure_bar"] = "kaputt"  # one bad value in every lot
    sensors.to_csv(tmp_path / "all.csv", index=False)
    job = quality_job(plant, tmp_path)
    job["data"]["source"] = {"path": str(tmp_path / "all.csv")}
    path = write_job(tmp_path / "job.yaml", job)
    errors = tmp_path / "all_problems.csv"
    assert main(["check", str(path), "--max", "2", "--errors", str(errors)]) == 1
    out = capsys.readouterr().out
    n = len(first)
    assert out.count("kaputt") == 2 + 1  # two rows, and the first reason in words
    assert f"and {n - 2} more" in out
    assert len(pd.read_csv(errors)) == n  # the file lists them all


@pytest.mark.slow
def test_training_leaves_the_bad_lots_out_and_lists_them(german, capsys) -> None:
    job, lots = german
    code = main(["train", "sensor", str(job)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = summary(captured.out)
    assert "3 lot(s) left out for bad values" in captured.err
    errors = pd.read_csv(f"{result['bundle']}.errors.csv", dtype={"lot": str})
    assert list(errors.columns) == ["lot", "file", "line", "column", "reason"]
    assert set(errors["lot"]) == {lots["date"], lots["value"], lots["label"]}
    line = errors.set_index("lot")["line"]
    assert int(line[lots["date"]]) == lots["line"]["date"]
    assert "lots left out" not in errors["reason"].iloc[0]  # each row names its own problem


def test_the_split_sees_only_the_kept_lots(german) -> None:
    from mfgtx.data import DataWarning
    from mfgtx.jobfile.prepare import read_windows, split
    from mfgtx.jobs import load_config
    from mfgtx.kinds import SENSOR

    job, lots = german
    config = load_config(job)
    left_out: list[dict] = []
    with pytest.warns(DataWarning, match=r"3 lot\(s\) left out for bad values"):
        windows, _ = read_windows(config, SENSOR, left_out=left_out)
    bad = {lots["date"], lots["value"], lots["label"]}
    assert {row["lot"] for row in left_out} == bad
    kept = {str(lot) for lot in windows.lots}
    assert kept and kept.isdisjoint(bad | {lots["short"]})
    sets = split(config, windows, strict=False).sets
    for part in (sets.train, sets.val, sets.test):
        assert {str(lot) for lot in windows.lot[part]}.isdisjoint(bad)


def test_training_stops_when_every_lot_is_bad(plant, tmp_path, capsys) -> None:
    sensors = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    sensors["pressure_bar"] = sensors["pressure_bar"].where(sensors.index % 50 != 3, "x")
    sensors.to_csv(tmp_path / "bad.csv", index=False)
    job = quality_job(plant, tmp_path)
    job["data"]["source"] = {"path": str(tmp_path / "bad.csv")}
    code = main(["train", "sensor", str(write_job(tmp_path / "job.yaml", job))])
    err = capsys.readouterr().err
    assert code == 2
    assert "every lot has a problem" in err and "holds 'x'" in err and "mfgtx check" in err


def test_check_goes_on_past_a_file_it_cannot_read(plant, tmp_path, capsys) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    sensors = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    lots = list(pd.unique(sensors["lot"]))
    first, second = sensors[sensors["lot"].isin(lots[:6])], sensors[sensors["lot"].isin(lots[6:])]
    first.assign(notes="ok").to_csv(folder / "a.csv", index=False)  # a column the job does not read
    text = second.to_csv(index=False).splitlines()
    text[0] = text[0].replace("pressure_bar", "temperature_c")  # a name given twice
    (folder / "b.csv").write_text("\n".join(text) + "\n")
    job = quality_job(plant, tmp_path)
    job["data"]["source"] = {"path": str(folder)}
    errors = tmp_path / "problems.csv"
    assert main(["check", str(write_job(tmp_path / "job.yaml", job)), "--errors", str(errors)]) == 1
    capsys.readouterr()
    found = pd.read_csv(errors).set_index("kind")
    assert found.loc["column name twice", "file"] == "b.csv"
    assert found.loc["column name twice", "effect"] == "stops the job"
    assert (
        found.loc["extra column", "column"] == "notes"
        and found.loc["extra column", "effect"] == "note"
    )


def test_check_reads_an_image_manifest_as_training_does(tmp_path, capsys) -> None:
    from PIL import Image

    for name in ("a.png", "b.png"):
        Image.new("L", (8, 8)).save(tmp_path / name)
    manifest = tmp_path / "images.csv"
    manifest.write_text("path,label\na.png,none\nb.png,scratch\ngone.png,scratch\n")
    job = {
        "images": {"path": str(manifest), "image_size": 32, "mode": "L", "good_class": "none"},
        "vit": {"patch_size": 8, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32},
        "bundle": str(tmp_path / "vit"),
    }
    path = write_job(tmp_path / "vit.yaml", job)
    assert main(["check", str(path), "--json"]) == 1
    (problem,) = summary(capsys.readouterr().out)["list"]
    assert problem["kind"] == "images cannot be read" and "gone.png" in problem["reason"]
    manifest.write_text("path,label\na.png,none\nb.png,scratch\n")
    assert main(["check", str(path)]) == 0
    assert "2 images listed" in capsys.readouterr().out


def test_a_clean_rerun_rewrites_only_an_errors_file_mfgtx_wrote(plant, tmp_path) -> None:
    from mfgtx.jobs import load_config
    from mfgtx.jobs.sinks import write_errors
    from mfgtx.jobs.train import _written_before, left_out_path

    config = load_config(write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path)))
    path = left_out_path(config)
    assert not _written_before(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_errors(path, [{"lot": "L1", "file": "a.csv", "line": 3, "column": "x", "reason": "r"}])
    assert _written_before(config)  # a run that leaves nothing out rewrites it
    path.write_text("lot,notes\nL1,mine\n")  # the user's own file of that name
    assert not _written_before(config)


def test_check_reads_a_scoring_job_without_a_model_section(german, capsys) -> None:
    import yaml

    job, lots = german
    spec = yaml.safe_load(job.read_text())
    del spec["model"], spec["train"], spec["split"]
    path = write_job(job.parent / "score_only.yaml", spec)
    assert main(["check", str(path), "--json"]) == 1
    found = {(p["kind"], p["lot"]) for p in summary(capsys.readouterr().out)["list"]}
    assert ("bad time", lots["date"]) in found and ("lot too short", lots["short"]) in found
