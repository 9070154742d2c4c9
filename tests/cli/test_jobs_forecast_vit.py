"""``train forecast`` and ``train vit`` from job files, and scoring their bundles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from mfgtx.cli import main
from mfgtx.jobs import load_config
from tests.bundles import load as load_bundle
from tests.cli.conftest import SENSORS, summary, train_until_killed, write_job
from tests.cli.test_jobs import _scoring_input

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, summary(captured.out), captured.err


def forecast_job(plant: Path, out: Path) -> dict:
    """A tiny forecaster of the plant's sensors: 32 rows of context, 8 ahead."""
    return {
        "data": {
            "source": {"path": str(plant / "sensors.csv")},
            "columns": {"lot": "lot", "time": "timestamp", "sensors": SENSORS, "keys": ["line"]},
        },
        "windows": {"window": 32, "stride": 16},
        "split": {"test_size": 3, "val_size": 3, "gap": "0s"},
        "forecast": {
            "horizon": 8,
            "targets": ["temperature_c", "pressure_bar"],  # the other two: past covariates
            "patch_len": 8,
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "quantiles": [0.1, 0.5, 0.9],
        },
        "train": {"epochs": 2, "batch_size": 16, "patience": None, "progress": "log"},
        "bundle": str(out / "models" / "forecast"),
        "score": {"last_per_lot": True, "output": {"path": str(out / "forecasts.parquet")}},
    }


def _patch(kind: str, rng: np.random.Generator) -> Image.Image:
    """A 32-px grey surface; ``scratch`` adds a bright vertical line somewhere."""
    x = rng.normal(110, 12, (32, 32))
    if kind == "scratch":
        c = rng.integers(6, 26)
        x[:, c : c + 2] += 90
    return Image.fromarray(np.clip(x, 0, 255).astype(np.uint8), mode="L")


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder per class (none, scratch), 30 images each."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    for kind in ("none", "scratch"):
        (root / kind).mkdir()
        for i in range(30):
            _patch(kind, rng).save(root / kind / f"{i:03d}.png")
    return root


def vit_job(images: Path, out: Path) -> dict:
    return {
        "images": {"path": str(images), "image_size": 32, "mode": "L", "good_class": "none"},
        "split": {"test_size": 0.25, "val_size": 0.25},
        "vit": {"patch_size": 8, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32},
        "train": {"epochs": 3, "batch_size": 16, "patience": None, "progress": "log"},
        "calibration": {"cost_ratio": 5},
        "bundle": str(out / "models" / "vit"),
        "score": {"output": {"path": str(out / "images.csv")}},
    }


@pytest.fixture(scope="module")
def bundles(plant, image_folder, tmp_path_factory) -> dict[str, Path]:
    """A forecaster and a defect ViT trained through ``mfgtx train``; their job files."""
    out = tmp_path_factory.mktemp("kinds")
    jobs = {
        "forecast": write_job(out / "forecast.yaml", forecast_job(plant, out)),
        "vit": write_job(out / "vit.yaml", vit_job(image_folder, out)),
    }
    for kind, path in jobs.items():
        assert main(["train", kind, str(path)]) == 0
    return jobs


def test_train_forecast_writes_an_audited_bundle_compared_with_a_linear_map(bundles) -> None:
    config = load_config(bundles["forecast"])
    bundle = load_bundle(str(config.bundle))
    assert type(bundle.model).__name__ == "CausalForecaster"
    assert bundle.model.config.n_channels == 2 and bundle.model.config.n_past_covariates == 2
    spec = bundle.manifest["input_spec"]
    assert bundle.manifest["audit"]["passed"] and spec["scaler"] is not None
    names = [r["name"] for r in bundle.manifest["metrics"]["rows"]]
    assert names[0] == "CausalForecaster" and "LinearRidge" in names and "Naive" in names
    interval = bundle.manifest["metrics"]["extra"]
    assert 0 <= interval["interval_coverage"] <= 1 and interval["interval_nominal"] == 0.8
    assert bundle.manifest["kind"] == "forecast"
    assert spec["targets"] == ["temperature_c", "pressure_bar"]
    assert spec["covariates"] == ["vibration_mm_s", "motor_current_a"]
    assert not Path(f"{config.bundle}.ckpt").exists()


def test_train_vit_writes_a_calibrated_bundle_compared_with_baselines(bundles) -> None:
    config = load_config(bundles["vit"])
    bundle = load_bundle(str(config.bundle))
    assert type(bundle.model).__name__ == "DefectViT"
    assert bundle.calibration is not None and bundle.calibration.good_class == 0
    names = [r["name"] for r in bundle.manifest["metrics"]["rows"]]
    assert names == ["DefectViT", "MajorityClass", "HOG + logistic regression"]
    assert bundle.manifest["metrics"]["unit"] == "images"
    assert bundle.manifest["split"]["method"] == "stratified"
    assert bundle.manifest["split"]["duplicate_files_across_sets"] == 0
    counts = bundle.manifest["audit"]["summary"]["images"]
    spec = bundle.manifest["input_spec"]
    assert spec["class_names"] == ["none", "scratch"] and counts["unreadable"] == 0
    assert counts["train"] + counts["val"] + counts["test"] == 60 and 14 <= counts["test"] <= 16
    # how sure, as for sensor reports: no lots, so the distinct test images are drawn
    (diff,) = bundle.manifest["metrics"]["differences"]
    assert diff["model"] == "DefectViT" and diff["metric"] == "f1"
    assert diff["baseline"] in names[1:] and diff["unit"] == "distinct test images"
    assert diff["n_groups"] == counts["test"]  # every generated image is a distinct file
    assert diff["low"] <= diff["difference"] <= diff["high"]


def test_one_batch_with_a_corrupt_image_and_a_malformed_lot_completes(
    bundles, plant, image_folder, tmp_path, capsys
) -> None:
    """The hourly batch: forecasts for new sensor rows and flags for new images; one bad lot
    and two bad images are listed with their reasons, everything else is scored, and a
    re-run gives the same outputs without duplicates."""
    rows = _scoring_input(plant, tmp_path)  # L1-0002 holds "n/a!"; SHORT-1 has 10 rows
    new = tmp_path / "new_images"
    (new / "line2").mkdir(parents=True)
    for name in ("a.png", "b.png", "line2/c.png"):
        (new / name).write_bytes((image_folder / "scratch" / "001.png").read_bytes())
    (new / "cut.png").write_bytes((image_folder / "none" / "002.png").read_bytes()[:60])
    Image.new("RGBA", (32, 32)).save(new / "alpha.png")
    (new / "README.txt").write_text("not an image, passed over")
    forecasts = tmp_path / "forecasts.parquet"
    images = tmp_path / "images.csv"
    forecast_args = [
        "score", str(bundles["forecast"]),
        "--set", f"score.source={{path: {rows}}}", "--set", f"score.output.path={forecasts}",
    ]  # fmt: skip
    image_args = [
        "score", str(bundles["vit"]),
        "--set", f"score.images={new}", "--set", f"score.output.path={images}",
    ]  # fmt: skip

    code, fc, err = _run(capsys, *forecast_args)
    assert code == 0, err
    assert fc["bad_lots"] == 2 and fc["kind"] == "forecast"
    bad = pd.read_csv(fc["errors_file"]).set_index("lot")
    assert set(bad.index) == {"L1-0002", "SHORT-1"} and "n/a!" in bad.loc["L1-0002", "reason"]
    out = pd.read_parquet(forecasts)
    assert len(out) == fc["windows"] * 8 * 2 == fc["output_rows"]  # windows x steps x sensors
    assert set(out["sensor"]) == {"temperature_c", "pressure_bar"}
    assert (out["q10"] <= out["q50"]).all() and (out["q50"] <= out["q90"]).all()
    assert np.isfinite(out["forecast"]).all() and "L1-0002" not in set(out["lot"])
    # last_per_lot: every forecast starts from its lot's latest row, whatever the stride
    given = pd.read_csv(rows)
    latest = pd.to_datetime(given["timestamp"], utc=True).groupby(given["lot"]).max()
    origin = pd.to_datetime(out["window_end"], utc=True).groupby(out["lot"]).agg(["min", "max"])
    assert (origin["min"] == origin["max"]).all()  # one origin per lot
    pd.testing.assert_series_equal(origin["max"], latest.loc[origin.index], check_names=False)

    code, im, err = _run(capsys, *image_args)
    assert code == 0, err
    assert im["images"] == 3 and im["bad_images"] == 2 and im["images_per_s"] > 0
    bad = pd.read_csv(im["errors_file"]).set_index("file")
    assert set(bad.index) == {"cut.png", "alpha.png"}
    assert "truncated" in bad.loc["cut.png", "reason"] and "RGBA" in bad.loc["alpha.png", "reason"]
    scored = pd.read_csv(images)
    assert sorted(scored["image"]) == ["a.png", "b.png", "line2/c.png"]
    assert np.allclose(scored[["p_none", "p_scratch"]].sum(axis=1), 1.0)
    assert set(scored["decision"]) <= {"defect", "good"}
    assert np.allclose(scored["p_defect"], 1 - scored["p_none"])  # P(defect) = 1 - P(none)

    # re-run: same outputs, no duplicates
    assert _run(capsys, *forecast_args)[0] == 0 and _run(capsys, *image_args)[0] == 0
    pd.testing.assert_frame_equal(pd.read_parquet(forecasts), out)
    pd.testing.assert_frame_equal(pd.read_csv(images), scored)


def test_train_forecast_starts_from_the_ridge_map_when_asked(plant, tmp_path, capsys) -> None:
    job = forecast_job(plant, tmp_path)
    job["forecast"]["linear_skip"] = "ridge"
    job["train"]["epochs"] = 1
    code, _, err = _run(capsys, "train", "forecast", str(write_job(tmp_path / "j.yaml", job)))
    assert code == 0, err
    model = load_bundle(job["bundle"]).model
    assert model.config.linear_skip
    # fitted in closed form, and not zero as an untrained skip starts
    assert float(model.skip.weight.detach().abs().sum()) > 0.0
    job["forecast"]["linear_skip"] = "ridgd"
    code, _, err = _run(capsys, "train", "forecast", str(write_job(tmp_path / "k.yaml", job)))
    assert code == 2 and "forecast.linear_skip" in err


def test_train_forecast_ships_the_ridge_map_when_it_wins_on_validation(plant, tmp_path, capsys):
    from mfgtx.kinds.forecast import ridge_map_alone

    job = forecast_job(plant, tmp_path)
    job["forecast"]["linear_skip"] = "ridge"
    job["train"].update(epochs=1, lr=0.3)  # an lr that spoils the Transformer: the map wins
    code, _, err = _run(capsys, "train", "forecast", str(write_job(tmp_path / "j.yaml", job)))
    assert code == 0, err
    bundle = load_bundle(job["bundle"])
    extra, row = bundle.manifest["metrics"]["extra"], bundle.manifest["metrics"]["rows"][0]
    assert extra["validation_mse_ridge_map"] <= extra["validation_mse_transformer"]
    assert extra["ridge_map_members"] == 1.0
    assert row["name"] == "CausalForecaster's ridge map (picked on validation)"
    assert "shipping the ridge map alone" in err
    model = bundle.model
    assert torch.equal(ridge_map_alone(model).direct.weight, model.direct.weight)  # shipped so
    # asked to ship the Transformer: it does, without a pick
    job["forecast"]["pick"] = "transformer"
    job["bundle"] = str(tmp_path / "models" / "transformer")
    code, _, err = _run(capsys, "train", "forecast", str(write_job(tmp_path / "k.yaml", job)))
    assert code == 0, err
    bundle = load_bundle(job["bundle"])
    assert bundle.manifest["metrics"]["rows"][0]["name"] == "CausalForecaster"
    assert "ridge_map_members" not in bundle.manifest["metrics"]["extra"]
    assert not torch.equal(ridge_map_alone(bundle.model).direct.weight, bundle.model.direct.weight)


def test_forecast_target_that_is_not_a_sensor_is_named(plant, tmp_path, capsys) -> None:
    job = forecast_job(plant, tmp_path)
    job["forecast"]["targets"] = ["temprature_c"]
    code, _, err = _run(capsys, "train", "forecast", str(write_job(tmp_path / "j.yaml", job)))
    assert code == 2 and "forecast.targets" in err and "temprature_c" in err


def test_strict_small_defect_guard_refuses_the_job(image_folder, tmp_path, capsys) -> None:
    job = vit_job(image_folder, tmp_path)
    job["vit"].update(min_defect_px=6, source_size=512, strict_defect_size=True)
    code, _, err = _run(capsys, "train", "vit", str(write_job(tmp_path / "j.yaml", job)))
    assert code == 2 and "vit:" in err and not Path(job["bundle"]).exists()


def test_killed_train_forecast_resumes(plant, tmp_path, capsys) -> None:
    job = forecast_job(plant, tmp_path)
    job["train"].update(epochs=2)
    path = write_job(tmp_path / "job.yaml", job)
    config = load_config(path)
    train_until_killed("forecast", config)
    assert not Path(str(config.bundle)).exists()
    code, result, err = _run(capsys, "train", "forecast", str(path), "--resume")
    assert code == 0, err
    assert result["resumed_from_epoch"] == 1 and result["epochs_run"] == 2


@pytest.mark.parametrize("kind", ["forecast", "vit"])
def test_audit_evaluate_bench_take_every_kind(bundles, kind, tmp_path, capsys) -> None:
    job = str(bundles[kind])
    code, audit, err = _run(capsys, "audit", job)
    assert code == 0 and audit["passed"], err
    report = tmp_path / "report.json"
    code, result, err = _run(capsys, "evaluate", job, "--report", str(report))
    assert code == 0, err
    trained = load_bundle(str(load_config(bundles[kind]).bundle)).manifest["metrics"]["rows"][0]
    # the same split and the same test set as train: the same figures
    assert report.is_file()
    for metric in ("mse", "accuracy"):
        if metric in trained["metrics"]:
            assert result["metrics"][metric] == pytest.approx(trained["metrics"][metric], 1e-5)
    code, speed, err = _run(capsys, "bench", job, "--repeats", "1")
    assert code == 0, err
    assert speed.get("windows_per_s", speed.get("images_per_s")) > 0


def test_evaluate_refuses_a_job_of_another_kind(bundles, capsys) -> None:
    vit_bundle = load_config(bundles["vit"]).bundle
    code, _, err = _run(
        capsys, "evaluate", str(bundles["forecast"]), "--set", f"bundle={vit_bundle}"
    )
    assert code == 2 and "holds a vit model" in err and "'images' section" in err


def test_one_continuous_series_is_cut_into_segments(tmp_path, capsys) -> None:
    """A historian export without lots: train on 1-day segments kept apart by the split,
    score the whole series so that its latest window is forecast."""
    t = pd.date_range("2026-01-01", periods=24 * 12, freq="h", tz="UTC")
    rng = np.random.default_rng(0)
    level = 20 + 3 * np.sin(np.arange(len(t)) * 2 * np.pi / 24)
    series = pd.DataFrame(
        {"time": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "temp": level + rng.normal(0, 0.1, len(t))}
    )
    series["load"] = series["temp"] * 0.5 + rng.normal(0, 0.1, len(t))
    path = tmp_path / "historian.csv"
    series.to_csv(path, index=False)
    job = {
        "data": {
            "source": {"path": str(path), "chunk_rows": 50},
            "segment": "1D",
            "columns": {"lot": "day", "time": "time", "sensors": ["temp", "load"]},
        },
        "windows": {"window": 8, "stride": 2},
        "split": {"test_size": 3, "val_size": 2},
        "forecast": {"horizon": 4, "patch_len": 4, "d_model": 8, "n_heads": 2, "n_layers": 1,
                     "d_ff": 16},
        "train": {"epochs": 1, "batch_size": 16, "patience": None, "progress": "off"},
        "bundle": str(tmp_path / "model"),
        "score": {"last_per_lot": True, "output": {"path": str(tmp_path / "out.csv")}},
    }  # fmt: skip
    config = write_job(tmp_path / "job.yaml", job)
    code, audit, err = _run(capsys, "audit", str(config))
    assert code == 0 and audit["passed"], err
    assert audit["lots"] == {"train": 7, "val": 2, "test": 3}  # 12 days, whole days per set
    code, trained, err = _run(capsys, "train", "forecast", str(config))
    assert code == 0 and trained["audit_passed"], err
    code, scored, err = _run(capsys, "score", str(config))
    assert code == 0 and scored["windows"] == 1, err
    out = pd.read_csv(tmp_path / "out.csv")
    assert set(out["lot"]) == {"whole"} and len(out) == 4 * 2
    assert out["window_end"].iloc[0] == "2026-01-12T23:00:00+00:00"  # the latest reading
    assert out["forecast_at"].max() == "2026-01-13T03:00:00+00:00"

    bad = dict(job, data=dict(job["data"], segment="a while"))
    code, _, err = _run(capsys, "audit", str(write_job(tmp_path / "bad.yaml", bad)))
    assert code == 2 and "data: segment must be a fixed length" in err
    series.assign(day="x").to_csv(path, index=False)  # the export has a column of that name
    code, _, err = _run(capsys, "audit", str(config))
    assert code == 2 and "data.segment creates the lot column 'day'" in err


def test_a_forecast_job_refuses_history_windows(plant, tmp_path, capsys) -> None:
    path = write_job(tmp_path / "forecast.yaml", forecast_job(plant, tmp_path))
    code = main(["train", "forecast", str(path), "--set", "windows.min_rows=16"])
    assert code == 2
    assert "windows.min_rows: forecasts need every context row" in capsys.readouterr().err


def test_image_reports_draw_whole_test_lots_when_the_manifest_has_lots() -> None:
    from mfgtx.kinds.vit import compare_images, image_records, prepare_images

    root = Path(__file__).resolve().parents[2]
    manifest = root / "sample_data" / "defects" / "manifest.csv"
    config = load_config(
        root / "pipelines" / "configs" / "sample_defects.yaml", [f"images.path={manifest}"]
    )
    prep = prepare_images(config.images, config.split, seed=config.train.seed)
    assert prep.split.method == "lot_time" and not prep.errors  # positions = manifest rows
    y = prep.labels[prep.test]
    perfect = np.eye(len(prep.names))[y]  # a model that is always right
    report = compare_images(prep, perfect, n_resamples=200)
    (diff,) = report.differences
    lots = image_records(config.images).frame["lot"].astype(str).to_numpy()
    assert diff.unit == "test lots" and diff.n_groups == len(np.unique(lots[prep.test]))
    assert diff.difference > 0 and diff.low <= diff.difference <= diff.high
    assert "test lots" in report.to_markdown()
    assert compare_images(prep, perfect, n_resamples=None).differences == ()
