"""train / score / audit / evaluate / bench end to end on a small copy of the sample plant."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.artifacts import BundleError
from mfgtx.cli import main
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobs.copy_sql import copy_to_sql
from tests.cli.conftest import SENSORS, quality_job, summary, write_job


@pytest.fixture(scope="module")
def trained(plant: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A tiny quality classifier trained through the command line, once per module, so that
    every test that scores with it runs alone and in any order; ``ctx`` holds the exit code,
    the summary and stderr of ``mfgtx train`` for the test that checks them."""
    out = tmp_path_factory.mktemp("trained")
    job = write_job(out / "job.yaml", quality_job(plant, out))
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["train", "sensor", str(job)])
    result = summary(stdout.getvalue())
    assert code == 0, stderr.getvalue()
    return job, {"out": out, "code": code, "result": result, "err": stderr.getvalue()}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, summary(captured.out), captured.err


def test_train_writes_an_audited_calibrated_bundle(trained) -> None:
    _, ctx = trained
    code, result, err = ctx["code"], ctx["result"], ctx["err"]
    assert code == 0, err
    assert result["ok"] and result["audit_passed"] and result["task"] == "classification"
    bundle = Path(result["bundle"])
    from tests.bundles import load as load_bundle

    loaded = load_bundle(bundle)
    assert loaded.bundle_id == result["bundle_id"]
    assert "calibration" in loaded.manifest  # null here: no defect among the few val lots
    assert loaded.manifest["audit"]["passed"] is True
    assert loaded.manifest["metrics"]["rows"][0]["name"] == "SensorEncoder"
    assert not Path(f"{bundle}.ckpt").exists()  # checkpoints removed after success
    assert not Path(f"{bundle}.lock").exists()
    # the summary's standing is the one rule's level for the report the bundle stores
    from mfgtx.baselines import EvaluationReport

    stored = EvaluationReport.from_dict(loaded.manifest["metrics"])
    assert result["standing"] == stored.standing().level
    assert result["verdict"] == stored.verdict


def _scoring_input(plant: Path, folder: Path) -> Path:
    """The plant's sensors with one non-numeric value in lot L1-0002 and a 10-row lot."""
    df = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    bad = df.index[df["lot"] == "L1-0002"][5]
    df.loc[bad, "pressure_bar"] = "n/a!"
    short = df[df["lot"] == "L2-0001"].head(10).assign(lot="SHORT-1")
    df = pd.concat([df, short], ignore_index=True)
    path = folder / "new_rows.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_score_file_bad_lots_reported_and_rerun_idempotent(
    trained, plant, tmp_path, capsys, suffix
) -> None:
    job, _ = trained
    source = _scoring_input(plant, tmp_path)
    out = tmp_path / f"scores.{suffix}"
    args = [
        "score", str(job),
        "--set", f"score.source={{path: {source}, chunk_rows: 150}}",
        "--set", f"score.output.path={out}",
    ]  # fmt: skip
    code, first, err = _run(capsys, *args)
    assert code == 0, err
    assert first["bad_lots"] == 2 and first["windows_per_s"] > 0
    errors = pd.read_csv(first["errors_file"])
    assert set(errors["lot"]) == {"L1-0002", "SHORT-1"}
    reason = errors.set_index("lot")["reason"]
    assert "pressure_bar" in reason["L1-0002"] and "n/a!" in reason["L1-0002"]
    bad = errors.set_index("lot").loc["L1-0002"]
    line = int(bad["line"])  # the CSV line of the bad value, as a spreadsheet shows it
    assert bad["file"] == "new_rows.csv" and bad["column"] == "pressure_bar"
    assert reason["L1-0002"].startswith(f"new_rows.csv line {line} (lot L1-0002)")
    assert source.read_text().splitlines()[line - 1].count("n/a!") == 1
    read = pd.read_parquet if suffix == "parquet" else pd.read_csv
    once = read(out)
    assert {"L1-0002", "SHORT-1"}.isdisjoint(set(once["lot"].astype(str)))
    assert len(once) == first["windows"] > 0
    assert {"lot", "window_end", "bundle_id", "p_bad", "decision"} <= set(once.columns)
    assert not {"p_0", "p_1"} & set(once.columns) and set(once["decision"]) <= {"bad", "good"}

    code, second, _ = _run(capsys, *args)
    assert code == 0 and second["windows"] == first["windows"]
    twice = read(out)
    assert not twice.duplicated(["lot", "window_end"]).any()
    pd.testing.assert_frame_equal(once, twice)


@pytest.mark.slow
def test_score_sqlite_source_and_table_idempotent(trained, plant, tmp_path, capsys) -> None:
    job, _ = trained
    db = tmp_path / "plant.db"
    copy_to_sql(SourceSection(path=str(plant / "sensors.csv")), f"sqlite:///{db}", "sensors")
    args = [
        "score", str(job),
        "--set", f"score.source={{url: 'sqlite:///{db}', table: sensors, chunk_rows: 300}}",
        "--set", f"score.output={{url: 'sqlite:///{db}', table: scores}}",
    ]  # fmt: skip
    code, first, _ = _run(capsys, *args)
    assert code == 0 and first["bad_lots"] == 0
    code, second, _ = _run(capsys, *args)
    assert code == 0
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        scores = pd.read_sql("SELECT * FROM scores", conn)
        indexes = sa.inspect(conn).get_indexes("scores")
    engine.dispose()
    assert len(scores) == first["windows"] == second["windows"]
    assert not scores.duplicated(["lot", "window_end"]).any()
    assert any(ix["unique"] and ix["column_names"] == ["lot", "window_end"] for ix in indexes)
    assert Path(first["errors_file"]).exists()


def test_score_refuses_a_locked_output(trained, tmp_path, capsys) -> None:
    job, _ = trained
    from mfgtx.jobs import output_lock

    out = tmp_path / "locked.parquet"
    with output_lock(out):  # another job (here: this process) holds the output
        code, result, err = _run(capsys, "score", str(job), "--set", f"score.output.path={out}")
    assert code == 1 and not result["ok"]
    assert f"held by running process {os.getpid()}" in err
    assert not out.exists()


def test_audit_evaluate_bench(trained, tmp_path, capsys) -> None:
    job, _ = trained
    code, result, _ = _run(capsys, "audit", str(job))
    assert code == 0 and result["passed"] and result["windows"]["test"] > 0
    report = tmp_path / "report.json"
    code, result, _ = _run(capsys, "evaluate", str(job), "--report", str(report))
    assert code == 0 and result["n_test"] > 0 and report.exists()
    code, result, _ = _run(capsys, "bench", str(job), "--repeats", "1")
    assert code == 0 and result["windows_per_s"] > 0


def test_a_split_that_purging_empties_is_a_config_error(trained, capsys) -> None:
    job, _ = trained
    code, result, err = _run(capsys, "audit", str(job), "--set", "split.gap=30D")
    assert code == 2 and not result["ok"]
    assert "job.yaml: split: fold 0: purging left no" in err


def test_missing_bundle_is_bad_input(trained, tmp_path, capsys) -> None:
    job, _ = trained
    code, result, err = _run(capsys, "score", str(job), "--set", f"bundle={tmp_path / 'none'}")
    assert code == 2 and result["exit_code"] == 2 and "none" in err


@pytest.mark.slow
def test_score_in_a_fresh_process(trained, tmp_path) -> None:
    """A scheduler runs score in a new process: the bundle's model class must be registered."""
    import subprocess
    import sys

    job, _ = trained
    out = tmp_path / "fresh.csv"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mfgtx",
            "-q",
            "score",
            str(job),
            "--set",
            f"score.output.path={out}",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert summary(done.stdout)["ok"] and out.is_file()


def _scores_equal(capsys: pytest.CaptureFixture[str], job: Path, tmp: Path, source: str) -> None:
    """``score`` of the job on ``source`` writes the same rows as on the job's own CSV."""
    outs = []
    for name, where in (("other", source), ("csv", None)):
        out = tmp / f"{name}.parquet"
        args = ["score", str(job), "--set", f"score.output.path={out}"]
        if where:
            args += ["--set", f"score.source={where}"]
        code, result, err = _run(capsys, *args)
        assert code == 0 and result["bad_lots"] == 0, err
        outs.append(pd.read_parquet(out))
    pd.testing.assert_frame_equal(outs[0], outs[1], check_exact=False, atol=1e-6)


def test_score_parquet_folder_in_small_chunks_equals_one_csv(trained, plant, tmp_path, capsys):
    job, _ = trained
    rows = pd.read_csv(plant / "sensors.csv")
    folder = tmp_path / "export"
    folder.mkdir()
    lots = rows["lot"].unique()
    for i, part in enumerate((lots[:5], lots[5:])):  # two files, lots grouped
        rows[rows["lot"].isin(part)].to_parquet(folder / f"part-{i}.parquet", index=False)
    _scores_equal(capsys, job, tmp_path, f"{{path: {folder}, chunk_rows: 64}}")


def test_score_a_european_export_equals_the_plain_csv(trained, plant, tmp_path, capsys):
    """An export with ';' between values, decimal commas and a Windows encoding scores as the
    plain CSV of the same values: the delimiter is found, decimal and encoding are given."""
    job, _ = trained
    rows = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    for c in SENSORS:
        rows[c] = rows[c].str.replace(".", ",", regex=False)
    export = tmp_path / "export.csv"
    rows.to_csv(export, sep=";", index=False, encoding="cp1252")
    source = f"{{path: {export}, decimal: ',', encoding: cp1252, chunk_rows: 100}}"
    _scores_equal(capsys, job, tmp_path, source)


def test_score_refuses_lots_split_across_the_input(trained, plant, tmp_path, capsys) -> None:
    job, _ = trained
    rows = pd.read_csv(plant / "sensors.csv", dtype=str)
    first = rows[rows["lot"] == rows["lot"].iloc[0]]
    mixed = pd.concat([first.iloc[:50], rows[rows["lot"] != first["lot"].iloc[0]], first.iloc[50:]])
    source = tmp_path / "mixed.csv"
    mixed.to_csv(source, index=False)
    out = tmp_path / "mixed.parquet"
    code, result, err = _run(
        capsys, "score", str(job),
        "--set", f"score.source={{path: {source}, chunk_rows: 100}}",
        "--set", f"score.output.path={out}",
    )  # fmt: skip
    assert code == 2 and not result["ok"] and "are not together" in err and not out.exists()


def test_a_stale_lock_is_taken_over(tmp_path) -> None:
    from mfgtx.jobs import output_lock

    target = tmp_path / "scores.parquet"
    Path(f"{target}.lock").write_text("999999999\n")  # no such process
    with output_lock(target) as lock:
        assert lock.read_text().strip() == str(os.getpid())
    assert not lock.exists()


def _windows_table(windows) -> pd.DataFrame:
    x, observed = windows.features(range(len(windows)))
    frame = pd.DataFrame({"lot": windows.lot, "end": windows.end, "y": windows.y[:, 0]})
    frame["x"] = [a.tobytes() for a in x]
    frame["observed"] = [a.tobytes() for a in observed]
    return frame.sort_values(["lot", "end"]).reset_index(drop=True)


def test_training_reads_in_lot_chunks_with_the_same_windows(plant, tmp_path, caplog) -> None:
    from mfgtx.jobfile.prepare import read_windows
    from mfgtx.jobs import load_config
    from mfgtx.kinds import SENSOR

    def load_windows(config):
        return read_windows(config, SENSOR)

    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    whole, _ = load_windows(load_config(path))
    chunked, _ = load_windows(load_config(path, ["data.source.chunk_rows=150"]))
    assert len(whole) == len(chunked) > 0
    pd.testing.assert_frame_equal(_windows_table(whole), _windows_table(chunked))

    # an export sorted by time interleaves the lots: it cannot stream, so it is read whole
    df = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    shuffled = tmp_path / "by_time.csv"
    df.sort_values("timestamp", kind="stable").to_csv(shuffled, index=False)
    overrides = [f"data.source={{path: {shuffled}, chunk_rows: 150}}"]
    with caplog.at_level("WARNING"):
        interleaved, _ = load_windows(load_config(path, overrides))
    assert "are not together" in caplog.text and "whole input" in caplog.text
    pd.testing.assert_frame_equal(_windows_table(whole), _windows_table(interleaved))


def test_last_per_lot_judges_each_test_lot_as_it_ends(plant, tmp_path) -> None:
    """``split.evaluate_on: last_per_lot``: each validation and test lot is judged by the
    window ending at its last row, though a stride of 30 steps over it."""
    from mfgtx.jobfile.prepare import read_windows, split
    from mfgtx.jobs import load_config
    from mfgtx.kinds import SENSOR

    job = quality_job(plant, tmp_path, windows={"window": 40, "stride": 30})
    job["split"]["evaluate_on"] = "last_per_lot"
    config = load_config(write_job(tmp_path / "job.yaml", job))
    windows, _ = read_windows(config, SENSOR)
    prepared = split(config, windows)
    rows = pd.read_csv(plant / "sensors.csv")
    latest = pd.to_datetime(rows["timestamp"], utc=True).groupby(rows["lot"]).max()
    for idx in (prepared.val, prepared.test):
        lots = windows.lot[idx]
        assert len(set(lots)) == len(lots) > 0  # one window per lot
        ends = pd.to_datetime(windows.end[idx], utc=True)
        assert (ends == latest.loc[lots].to_numpy()).all()
    assert (rows.groupby("lot").size() % 30 != 10).any()  # a lot the grid alone would miss


def test_a_window_longer_than_every_lot_is_a_config_error(plant, tmp_path, capsys) -> None:
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    code = main(["audit", str(path), "--set", "windows.window=5000", "--set", "windows.stride=1"])
    assert code == 2
    assert "windows.window: no lot has 5000 rows" in capsys.readouterr().err


def test_history_windows_train_and_score_from_each_lots_first_rows(plant, tmp_path, capsys):
    """``windows.min_rows``: windows reach back before a lot's first row; the bundle keeps
    it and scoring windows the same way, so a young lot is scored as soon as it has
    ``min_rows`` rows."""
    windows = {"window": 60, "stride": 20, "min_rows": 20}
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path, windows=windows))
    code, result, err = _run(capsys, "train", "sensor", str(job))
    assert code == 0, err

    import mfgtx

    assert mfgtx.load(Path(result["bundle"])).input_spec.windowing.min_rows == 20

    source = _scoring_input(plant, tmp_path)  # SHORT-1 has 10 rows: fewer than min_rows
    out = tmp_path / "scores.parquet"
    args = ["score", str(job), "--set", f"score.source={{path: {source}}}"]
    code, scored, err = _run(capsys, *args, "--set", f"score.output.path={out}")
    assert code == 0, err
    errors = pd.read_csv(scored["errors_file"]).set_index("lot")["reason"]
    assert "SHORT-1" in errors and "20" in errors["SHORT-1"]
    scores = pd.read_parquet(out)
    rows = pd.read_csv(source, dtype=str, keep_default_na=False)
    lot = "L1-0001"
    times = pd.to_datetime(rows.loc[rows["lot"] == lot, "timestamp"], utc=True).tolist()
    ends = pd.to_datetime(scores.loc[scores["lot"] == lot, "window_end"], utc=True).tolist()
    # windows end at the lot's 20th, 40th, 60th ... row (the first two reach back before
    # it), and the last at its latest row (197 rows: the stride steps over it)
    assert len(times) == 197 and ends == [*times[19::20], times[-1]]


def test_history_windows_min_rows_is_checked(plant, tmp_path, capsys) -> None:
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    code = main(["audit", str(path), "--set", "windows.min_rows=100"])
    assert code == 2 and "min_rows must be between 1 and window=40, found 100" in (
        capsys.readouterr().err
    )


def test_the_predictor_windows_as_the_bundle_was_trained(tmp_path) -> None:
    """The one place score and the dashboard window a sensor bundle: its columns without
    labels, its window, stride and min_rows, and each lot's latest row; a bundle of the
    earlier layout (format 2, ``extra.job``) is read through its small reader."""
    import torch

    import mfgtx
    from mfgtx.data import ColumnMap, SensorScaler, Windowing
    from mfgtx.kinds import SensorSpec
    from mfgtx.models import SensorEncoder, SensorEncoderConfig
    from tests.bundles import save

    cols = ColumnMap("m", "t", sensors=("x",), targets=("rul",))
    scaler = SensorScaler(sensors=("x",), method="standard", center=(0.0,), scale=(1.0,))
    spec = SensorSpec(cols, Windowing(window=6, stride=4, min_rows=2), "regression", ("rul",),
                      "number", scaler)  # fmt: skip
    model = SensorEncoder(SensorEncoderConfig(n_channels=1, max_len=6, d_model=8, n_heads=2,
                                              n_layers=1, d_ff=16))  # fmt: skip
    predictor = mfgtx.load(save(tmp_path / "new", model, spec=spec))
    assert predictor.columns == ColumnMap("m", "t", sensors=("x",))
    df = pd.DataFrame({"m": ["A"] * 9, "t": range(9), "x": range(9)})
    w = predictor.windows(df)
    assert w.end.tolist() == [1, 5, 8]  # from the 2nd row, 4 apart, and the latest
    assert w.pad.tolist() == [4, 0, 0]
    assert predictor.windows(df, stride=1).end.tolist() == [*range(1, 9)]
    torch.manual_seed(0)
    old = save(
        tmp_path / "old", model, scaler=scaler,
        data_schema={"lot": "m", "time": "t", "sensors": ["x"], "targets": ["rul"]},
        extra={"job": {"window": 6, "targets": ["rul"], "task": "regression"}},
    )  # fmt: skip
    assert mfgtx.load(old).windows(df).end.tolist() == [5, 8]  # stride = window, no padding
    missing = save(tmp_path / "older", model, extra={"job": {"min_rows": 2}})
    with pytest.raises(BundleError, match="older was written by an earlier mfgtx.*retrain it"):
        mfgtx.load(missing)
