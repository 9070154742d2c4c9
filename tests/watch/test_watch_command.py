"""``mfgtx watch JOB`` end to end, in process, on a tiny bundle of the small plant: quiet on
the plant's own data, exit 3 on a shifted or a dead sensor, each watch in the history, plain
errors, and an old bundle (no training profile) judged as far as it can be."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.artifacts import BundleError, verify_bundle
from mfgtx.cli import main
from mfgtx.cli.watch import NOT_VALID_EXIT
from mfgtx.history import latest_watches, read_history, watches_of
from mfgtx.jobs import load_config, score
from tests.cli.conftest import summary, write_job

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bundles_66eb24c"


def _watch(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["watch", *args])
    out = capsys.readouterr()
    return code, summary(out.out), out.out + out.err


def _history(path: Path):
    return read_history(sa.create_engine(f"sqlite:///{path}"), str(path))


def _profile(bundle: Path) -> dict:
    manifest = json.loads((bundle / "manifest.json").read_text())
    return manifest["extra"]["training_profile"]


def test_the_bundle_keeps_its_training_profile_under_its_checksums(quality_bundle, plant, tmp_path):
    _, bundle = quality_bundle
    profile = _profile(bundle)
    assert set(profile["sensors"]) == {
        "temperature_c",
        "pressure_bar",
        "vibration_mm_s",
        "motor_current_a",
    }
    temp = profile["sensors"]["temperature_c"]
    assert temp["count"] > 0 and len(temp["quantiles"]) == 20 and temp["std"] > 0
    lots = temp["lots"]  # each training lot in a few numbers, for the lot-aware limits
    plant_lots = pd.read_csv(plant / "sensors.csv")["lot"]
    assert len(lots["counts"]) == min(plant_lots.nunique(), 100)
    assert sum(lots["counts"]) <= temp["count"] and len(lots["quantiles"][0]) == 10
    assert profile["keys"] == ["line"]  # each training lot's line, to judge a line on its own
    plant_lines = pd.read_csv(plant / "sensors.csv").groupby("line")["lot"].nunique()
    assert pd.Series([k[0] for k in lots["keys"]]).value_counts().to_dict() == plant_lines.to_dict()
    forged = tmp_path / "forged"
    shutil.copytree(bundle, forged)
    text = (forged / "manifest.json").read_text()
    mean = json.dumps(temp["mean"])
    assert mean in text
    (forged / "manifest.json").write_text(text.replace(mean, json.dumps(temp["mean"] + 30), 1))
    with pytest.raises(BundleError, match="manifest.json"):
        verify_bundle(forged)


def test_watch_is_quiet_on_the_plants_data_and_flags_a_shifted_and_a_dead_sensor(
    quality_bundle, plant, tmp_path, capsys
):
    job, bundle = quality_bundle
    out = tmp_path / "scores.parquet"
    here = [job.as_posix(), "--set", f"score.output.path={out}"]
    score(load_config(job, [f"score.output.path={out}"]))  # the history, as a schedule makes it

    code, found, text = _watch(capsys, *here)
    assert code == 0 and found["verdict"] == "valid" and found["findings"] == []
    assert "temperature_c: ok" in text and "verdict: still valid" in text

    rows = pd.read_csv(plant / "sensors.csv")
    spread = _profile(bundle)["sensors"]["temperature_c"]["std"]
    shifted = rows.assign(temperature_c=rows["temperature_c"] + 2 * spread)
    shifted.to_csv(tmp_path / "shifted.csv", index=False)
    code, found, text = _watch(
        capsys, *here, "--set", f"score.source.path={tmp_path / 'shifted.csv'}"
    )
    assert code == NOT_VALID_EXIT == found["exit_code"] and found["verdict"] == "not_valid"
    assert "drift:temperature_c" in found["findings"] and found["findings"][-1] == "not_valid"
    # judged line by line (the job's keys: [line]); 4 training lots a line are too few
    assert "temperature_c on line L" in text and "has only 4 training lot(s)" in text
    assert not any(
        r.endswith(("pressure_bar", "vibration_mm_s", "motor_current_a")) for r in found["findings"]
    )

    rows.assign(vibration_mm_s="").to_csv(tmp_path / "dead.csv", index=False)
    code, found, text = _watch(
        capsys, *here, "--set", f"score.source.path={tmp_path / 'dead.csv'}", "--last", "3"
    )
    assert code == NOT_VALID_EXIT and found["lots"] == 3
    assert found["findings"] == ["dead:vibration_mm_s", "not_valid"]
    assert "vibration_mm_s: dead" in text and "no reading at all" in text

    store = _history(tmp_path / "history.db")
    assert watches_of(store, found["bundle_id"])["verdict"].tolist() == [
        "not_valid",
        "not_valid",
        "valid",
    ]
    latest = latest_watches(store)
    assert len(latest) == 1 and latest["verdict"].iloc[0] == "not_valid"
    reasons = [f["reason"] for f in latest["findings"].iloc[0]]
    assert reasons[:2] == ["dead:vibration_mm_s", "not_valid"] and "model" in reasons


def test_watch_thresholds_come_from_the_job_file(quality_bundle, tmp_path, capsys):
    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    code, found, _ = _watch(
        capsys, job.as_posix(), "--set", f"score.output.path={out}", "--set", "watch.drift=0.001"
    )  # the training lots themselves: within the lot-to-lot variation, never below the floor
    assert code == 0 and not any(r.startswith("drift:") for r in found["findings"])
    code, _, text = _watch(capsys, job.as_posix(), "--set", "watch.drift=50")
    assert code == 0 and "(limit 50.00 for " in text
    code, found, text = _watch(capsys, job.as_posix(), "--set", "watch.drfit=1")
    assert code == 2 and "watch.drfit: unknown key; did you mean 'drift'?" in text


def test_watch_errors_are_plain_words(tmp_path, capsys):
    job = write_job(
        tmp_path / "job.yaml",
        {
            "bundle": str(tmp_path / "nowhere"),
            "score": {"output": {"path": str(tmp_path / "s.csv")}},
        },
    )
    code, found, text = _watch(capsys, job.as_posix())
    assert code == 2 and found["ok"] is False
    assert "mfgtx watch: error:" in text and "nowhere" in text and "Traceback" not in text


@pytest.mark.parametrize("name", ["sensor", "forecast_direct", "vit"])
def test_an_old_bundle_is_watched_as_far_as_it_can_be(name, tmp_path, capsys):
    """Bundles written before training profiles (main 66eb24c) still load; the watch says a
    sensor model predates them and how to get them (an image model's inputs are not
    watched), and exits 0 (nothing found)."""
    section = {
        "source": {"path": str(FIXTURE / "sensors.csv")},
        "images": str(FIXTURE / "images"),
        "output": {"path": str(tmp_path / "scores.parquet")},
    }
    job = write_job(tmp_path / "job.yaml", {"bundle": str(FIXTURE / name), "score": section})
    code, found, text = _watch(capsys, job.as_posix())
    assert code == 0 and found["verdict"] == "unknown" and found["findings"] == []
    if name == "vit":
        assert "an image model: its inputs are not watched" in text
    else:
        assert "predates training distributions" in text and "retrain" in text


def test_the_model_is_judged_on_the_truth_that_arrived(quality_bundle, plant, tmp_path, capsys):
    """The history's scores joined to the lots' inspection results: each lot judged once (its
    last window), on the Brier score beside the bundle's own test figure."""
    from mfgtx.history import open_history, record_truth

    job, bundle = quality_bundle
    out = tmp_path / "scores.parquet"
    score(load_config(job, [f"score.output.path={out}"]))
    quality = pd.read_csv(plant / "quality.csv")
    truth = pd.DataFrame({"lot": quality["lot"], "defect": (~quality["passed"]).astype(float)})
    store = open_history(sa.create_engine(f"sqlite:///{tmp_path / 'history.db'}"), "history.db")
    record_truth(store, truth, targets=("defect",), source="quality.csv")
    code, found, text = _watch(capsys, job.as_posix(), "--set", f"score.output.path={out}")
    assert found["judged"] == len(quality) == 12
    test_brier = json.loads((bundle / "manifest.json").read_text())["metrics"]["rows"][0]["metrics"]
    assert f"{test_brier['brier']:.4g}" in text  # the bundle's own test figure, compared
    model = watches_of(store, found["bundle_id"])["findings"].iloc[0][-1]
    assert model["reason"] == "model" and model["figure"] == "brier" and model["judged"] == 12
    assert model["realized"] > 0 and model["valid"] in (True, False)
    assert code == (NOT_VALID_EXIT if found["verdict"] == "not_valid" else 0)


def test_the_watchs_drift_raises_one_alert_until_it_clears(quality_bundle, plant, tmp_path, capsys):
    """The watch's findings reach the job's ``alerts:`` targets once (a local webhook), a
    second watch that finds the same drift sends nothing, a clean watch clears it."""
    from tests.alerts.conftest import _serve, free_port

    server, receiver = _serve(free_port())
    try:
        job, bundle = quality_bundle
        out = tmp_path / "scores.parquet"
        here = [job.as_posix(), "--set", f"score.output.path={out}",
                "--set", f"alerts.to=[{receiver.url()}]", "--set", "alerts.on=[drift]"]  # fmt: skip
        score(load_config(job, [f"score.output.path={out}"]))
        rows = pd.read_csv(plant / "sensors.csv")
        spread = _profile(bundle)["sensors"]["temperature_c"]["std"]
        rows.assign(temperature_c=rows["temperature_c"] + 2 * spread).to_csv(
            tmp_path / "shifted.csv", index=False
        )
        shifted = [*here, "--set", f"score.source.path={tmp_path / 'shifted.csv'}"]
        _, first, _ = _watch(capsys, *shifted)
        _, second, _ = _watch(capsys, *shifted)
        n = sum(r.startswith(("drift:", "range:")) for r in first["findings"])  # alerts.on: drift
        assert n >= 1 and "drift:temperature_c" in first["findings"]
        assert first["alerts"].startswith(f"{n} opened, {n} sent, 0 failed")
        assert second["alerts"].startswith(f"0 opened, 0 sent, 0 failed, 0 cleared; {n} open")
        assert len(receiver.posts) == 1
        assert "temperature_c" in json.dumps(receiver.posts[0]["body"])
        _, clean, _ = _watch(capsys, *here)
        assert clean["alerts"].startswith(f"0 opened, 0 sent, 0 failed, {n} cleared; 0 open")
    finally:
        server.shutdown()


def test_the_schedulers_script_is_mfgtx_watch(tmp_path) -> None:
    """pipelines/watch.py passes its arguments to ``mfgtx watch`` and keeps its exit code."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "pipelines" / "watch.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "nojob.yaml")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert json.loads(done.stdout.strip().splitlines()[-1])["command"] == "watch"
