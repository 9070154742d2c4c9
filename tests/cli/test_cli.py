"""The command line itself: --help, config validation, exit codes, resume, the quick demo."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mfgtx.cli import main
from mfgtx.jobs import ConfigError, load_config
from tests.cli.conftest import quality_job, summary, train_until_killed, write_job

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["train", "evaluate", "score", "audit", "check", "app", "demo", "bench"]


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_on_every_command(command, capsys) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mfgtx")
    if command is not None:
        assert command in out.splitlines()[0]


def test_python_dash_m_mfgtx_runs_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mfgtx", "--version"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("mfgtx ")


def test_version_imports_no_model() -> None:
    """``mfgtx --version`` answers without importing torch, a model or a kind: the kinds
    ``train`` accepts are read only when a command or its help needs them."""
    code = (
        "import sys\n"
        "from mfgtx.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'mfgtx.models', 'mfgtx.kinds') if m in sys.modules]\n"
        "print('imported:', heavy)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "imported: []" in done.stdout, done.stdout


def test_usage_error_exits_2(capsys) -> None:
    assert main(["train", "nonsense", "job.yaml"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_unknown_key_is_named_with_a_suggestion(plant, tmp_path, capsys) -> None:
    job = quality_job(plant, tmp_path)
    job["data"]["colums"] = job["data"].pop("columns")
    path = write_job(tmp_path / "job.yaml", job)
    assert main(["audit", str(path)]) == 2
    captured = capsys.readouterr()
    assert "job.yaml: data.colums: unknown key; did you mean 'columns'?" in captured.err
    assert summary(captured.out)["exit_code"] == 2


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.epoch=3", "train.epoch: unknown key; did you mean 'epochs'?"),
        ("train.epochs=three", "train.epochs: expected a whole number, found 'three'"),
        ("model.task=clustering", "model.task: must be one of"),
        ("windows.window=1", "windows: window must be >= 2 rows, found 1"),
        ("train.lr=-1", "train: lr must be positive"),
        ("score.output.path=out.xlsx", "score.output: path must end in .parquet or .csv"),
    ],
)
def test_overrides_are_validated_like_the_file(plant, tmp_path, override, message) -> None:
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(path, [override])


def test_overrides_change_any_key(plant, tmp_path) -> None:
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    config = load_config(path, ["train.epochs=3", "data.columns.keys=[]", "split.gap=1h"])
    assert config.train.epochs == 3 and config.data.columns.keys == () and config.split.gap == "1h"


def test_an_unknown_kind_exits_2(capsys) -> None:
    assert main(["train", "lstm", "does-not-matter.yaml"]) == 2
    assert "invalid choice: 'lstm'" in capsys.readouterr().err


def test_app_without_the_dashboard_exits_2(tmp_path, capsys) -> None:
    assert main(["app", "--path", str(tmp_path / "main.py")]) == 2
    assert "dashboard is not in this version" in capsys.readouterr().err


@pytest.mark.slow
def test_killed_train_resumes_from_its_checkpoint(plant, tmp_path, capsys) -> None:
    from mfgtx.jobs import train

    job = quality_job(plant, tmp_path)
    job["train"].update(epochs=3, batch_size=8)
    path = write_job(tmp_path / "job.yaml", job)
    config = load_config(path)
    ckpt = train_until_killed("sensor", config)
    assert ckpt.exists() and not Path(str(config.bundle)).exists()  # no partial bundle

    assert main(["train", "sensor", str(path), "--resume"]) == 0
    result = summary(capsys.readouterr().out)
    assert result["resumed_from_epoch"] == 1 and result["epochs_run"] == 3
    assert Path(result["bundle"]).is_dir() and not ckpt.exists()

    # the resumed run ends with the weights of a run that was never interrupted
    from safetensors.torch import load_file

    whole = train("sensor", load_config(path, [f"bundle={tmp_path / 'whole'}"]))
    resumed = load_file(Path(result["bundle"]) / "weights.safetensors")
    uninterrupted = load_file(Path(whole.bundle) / "weights.safetensors")
    assert resumed.keys() == uninterrupted.keys()
    assert all(resumed[k].equal(uninterrupted[k]) for k in resumed)


@pytest.mark.slow
def test_demo_quick_no_app_end_to_end(plant, tmp_path, capsys) -> None:
    out = tmp_path / "demo"
    argv = ["demo", "--quick", "--no-app", "--data", str(plant), "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    first = capsys.readouterr().out
    assert "sample_quality: trained" in first and "sample_rul: trained" in first
    assert "sample_forecast: trained" in first
    # it says how long it will take and which model each job trains, then what it took
    assert re.search(r"demo: training .* \(about \d+ (s|min) on 2 cores\)", first), first
    assert re.search(r"sample_quality: training the Transformer \(classification\), 2 epochs "
                     r"\(about \d+ s\)", first), first  # fmt: skip
    assert re.search(r"sample_forecast: trained \S+ in \d+ s", first), first
    for name in ("sample_quality", "sample_rul"):
        assert (out / "models" / name / "manifest.json").is_file()
        assert (out / "results" / f"{name}.parquet").is_file()
    import mfgtx

    forecaster = mfgtx.load(out / "models" / "sample_forecast")
    assert type(forecaster.model).__name__ == "CausalForecaster"
    assert forecaster.audit.passed and forecaster.input_spec.scaler is not None
    import pandas as pd

    rul = pd.read_parquet(out / "results" / "sample_rul.parquet")
    assert {"rul_cycles", "rul_cycles_q10", "rul_cycles_q90"} <= set(rul.columns)
    # the quality line's days: one score run each into the job's history, the temperature
    # drifting, inspection results arriving
    days = re.findall(r"sample_quality (\d{4}-\d\d-\d\d): scored \d+ windows .*temperature_c "
                      r"reads \+([\d.]+)\); (\d+) inspection", first)  # fmt: skip
    assert len(days) >= 3 and float(days[-1][1]) > float(days[1][1]) > 0, first
    assert sum(int(d[2]) for d in days) > 0
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{out / 'results' / 'history.db'}")
    with engine.connect() as conn:
        runs = conn.execute(sa.text("SELECT COUNT(*) FROM history_runs")).scalar_one()
    engine.dispose()
    assert runs >= len(days) + 2  # the days, and the jobs' own runs
    # second run, with the app: bundles reused, straight to scoring and the dashboard, which
    # is not in this version: a warning, not a failure of the demo
    argv = [a for a in argv if a != "--no-app"] + ["--app", str(tmp_path / "no_app.py")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "sample_quality: reusing" in captured.out
    # and the scores, written by these bundles from the same input: not scored again
    assert "sample_quality: scores up to date" in captured.out
    assert "sample_forecast: scored" not in captured.out
    assert "sample_quality: its " in captured.out and "days are up to date" in captured.out
    assert "dashboard is not in this version" in captured.err


def test_app_runs_streamlit_on_the_given_script(tmp_path) -> None:
    from mfgtx.cli.app import _app_command

    script = tmp_path / "main.py"
    script.write_text("")
    cmd = _app_command(script, 8502)
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and str(script) in cmd
    assert "8502" in cmd


def test_app_is_pointed_at_the_demo_bundles_and_data(tmp_path) -> None:
    from mfgtx.cli.app import _app_env

    (tmp_path / "models").mkdir()
    env = _app_env(str(tmp_path), "sample_data")
    assert env["MFGTX_MODELS_DIR"] == str(tmp_path / "models")
    assert env["MFGTX_DATA_DIR"] == "sample_data"
    assert _app_env(str(tmp_path / "bundles"), None)["MFGTX_MODELS_DIR"] == str(
        tmp_path / "bundles"
    )


def test_log_flags_also_after_the_command(plant, tmp_path, capsys) -> None:
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    assert main(["audit", str(path), "-q"]) == 0  # as pipelines/audit.py JOB.yaml -q passes it
    captured = capsys.readouterr()
    assert summary(captured.out)["passed"] and "INFO" not in captured.err


@pytest.mark.slow
def test_demo_quick_trains_then_starts_and_stops_the_dashboard(plant, tmp_path) -> None:
    import signal
    import socket
    import subprocess
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "mfgtx", "demo", "--quick", "--data", str(plant)]
    app = Path(__file__).resolve().parents[2] / "app" / "main.py"
    cmd += ["--out", str(out), "--port", str(port), "--app", str(app)]
    log = (tmp_path / "demo.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, healthy = time.monotonic() + 180, False
        while time.monotonic() < deadline and proc.poll() is None and not healthy:
            try:
                url = f"http://127.0.0.1:{port}/_stcore/health"
                healthy = urllib.request.urlopen(url, timeout=2).read() == b"ok"
            except OSError:
                time.sleep(1)
        assert healthy, (tmp_path / "demo.log").read_text()[-3000:]
        assert (out / "models" / "sample_quality" / "manifest.json").is_file()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def test_app_command_pins_the_plant_network_settings() -> None:
    from mfgtx.cli.app import _app_command

    script = ROOT / "app" / "main.py"
    cmd = _app_command(script, None)
    flags = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    assert flags["--server.address"] == "127.0.0.1"
    assert flags["--browser.gatherUsageStats"] == "false"
    assert flags["--client.showErrorDetails"] == "none"
    assert flags["--server.enableXsrfProtection"] == "true"
    wide = dict(zip(*[iter(_app_command(script, 8600, "0.0.0.0")[5:])] * 2, strict=True))
    assert wide["--server.address"] == "0.0.0.0" and wide["--server.port"] == "8600"


def test_hash_password_reads_a_piped_password(monkeypatch, capsys) -> None:
    import io

    from mfgtx.cli import main
    from mfgtx.passwords import verify_password

    monkeypatch.setattr("sys.stdin", io.StringIO("line 3 nights\n"))
    assert main(["hash-password"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith('app_password_hash = "pbkdf2_sha256$')
    assert verify_password("line 3 nights", line.split('"')[1])
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["hash-password"]) == 2


def test_audit_lists_the_label_check_as_not_checked_without_label_times(
    plant, tmp_path, capsys
) -> None:
    """Without data.columns.label_time the windows' label times are the rows' own: the
    command says the label check was not made, not that it passed."""
    job = quality_job(plant, tmp_path)
    del job["data"]["columns"]["label_time"]
    path = write_job(tmp_path / "job.yaml", job)
    assert main(["audit", str(path)]) == 0  # nothing failed
    out = capsys.readouterr().out
    assert "PASS label_availability" not in out
    assert re.search(r"^NOT CHECKED label_availability: .*filled in", out, re.M), out
    assert "label_availability" in summary(out)["not_checked"]
    # with the inspection times mapped, the check is made
    path = write_job(tmp_path / "given.yaml", quality_job(plant, tmp_path))
    main(["audit", str(path)])
    out = capsys.readouterr().out
    assert re.search(r"^(PASS|FAIL) label_availability", out, re.M), out
    assert "label_availability" not in summary(out)["not_checked"]
