"""A tiny remaining-life bundle: calibrated on its validation lots, saved, applied when scoring."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import mfgtx
from mfgtx.calibration.conformal import BUNDLE_KEY, IntervalCalibration
from mfgtx.jobs import load_config, train
from mfgtx.kinds import FORECAST, SENSOR
from mfgtx.kinds._predictor import Trained
from mfgtx.kinds.forecast import ForecastPredictor
from mfgtx.kinds.sensor import SensorPredictor

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def _job(tmp: Path, **calibration: object) -> Path:
    job = {
        "data": {
            "source": {"path": str(SAMPLE / "degradation.csv")},
            "label_known": "lot_end",
            "columns": {
                "lot": "machine",
                "time": "timestamp",
                "targets": ["rul_cycles"],
                "label_time": "failed_at",
                "sensors": ["load_pct", "vibration_mm_s", "bearing_temp_c"],
            },
        },
        "windows": {"window": 20, "stride": 10},
        "split": {"test_size": 0.25, "val_size": 0.3, "gap": "0s"},
        "model": {
            "task": "regression",
            "tokens": "sensor",
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "quantiles": [0.1, 0.5, 0.9],
            "target_scale": 100.0,
            "dropout": 0.0,
        },
        "train": {
            "epochs": 2,
            "batch_size": 32,
            "patience": None,
            "progress": "log",
            "precision": "fp32",
        },
        "calibration": calibration,
        "bundle": str(tmp / "models" / "rul"),
        "score": {"output": {"path": str(tmp / "scores.parquet")}},
    }
    path = tmp / "rul.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def rul_bundle(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("rul")
    return Path(
        str(train("sensor", load_config(_job(tmp, bounds={"rul_cycles": [0, None]}))).bundle)
    )


def test_the_bundle_holds_a_cqr_calibration_fitted_on_validation_lots(rul_bundle) -> None:
    predictor = mfgtx.load(rul_bundle)
    record = predictor.bundle.manifest["extra"][BUNDLE_KEY]
    cal = predictor.intervals
    assert cal == IntervalCalibration.from_dict(record)
    assert cal.method == "cqr" and cal.coverage == 0.8 and cal.shape == (1,)
    assert cal.lower == (0.0,) and cal.upper == (None,)
    assert cal.lots >= 1 and cal.margin[0] > -1e6


def test_scores_carry_the_calibrated_band_never_below_zero(rul_bundle) -> None:
    predictor = mfgtx.load(rul_bundle)
    cal = predictor.intervals
    frame = pd.read_csv(SAMPLE / "degradation.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    rows = predictor.rows(windows, idx)
    # the same model without the record: what a bundle written before calibration gives
    raw = SensorPredictor(SENSOR, Trained(predictor.model), predictor.input_spec).rows(windows, idx)
    m = cal.margin[0]
    np.testing.assert_allclose(
        rows["rul_cycles_q10"], np.maximum(raw["rul_cycles_q10"] - m, 0.0), atol=1e-9
    )
    np.testing.assert_allclose(
        rows["rul_cycles_q90"], np.maximum(raw["rul_cycles_q90"] + m, 0.0), atol=1e-9
    )
    assert (rows[["rul_cycles", "rul_cycles_q10", "rul_cycles_q50", "rul_cycles_q90"]] >= 0).all(
        axis=None
    )
    assert (rows["rul_cycles_q10"] <= rows["rul_cycles_q90"]).all()
    # predict (and so score and the dashboard) give the same rows
    predicted = predictor.predict(frame).sort_values(["lot", "window_end"]).reset_index(drop=True)
    ordered = rows.sort_values(["lot", "window_end"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(predicted, ordered, check_dtype=False)


def test_a_bundle_without_the_record_scores_as_before(rul_bundle, tmp_path) -> None:
    import shutil

    from mfgtx.artifacts import load_bundle
    from mfgtx.kinds import MODEL_CLASSES

    predictor = mfgtx.load(rul_bundle)
    frame = pd.read_csv(SAMPLE / "degradation.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    out, q = predictor.outputs(windows, idx)
    # a copy of the bundle whose manifest lacks the record (re-saved: checksums agree)
    old = tmp_path / "old"
    shutil.copytree(rul_bundle, old)
    bundle = load_bundle(old, classes=MODEL_CLASSES)
    assert bundle.manifest["extra"].pop(BUNDLE_KEY)
    older = SENSOR.predictor(bundle)
    assert older.intervals is None
    rows = older.rows(windows, idx)
    np.testing.assert_allclose(rows["rul_cycles_q10"], q[:, 0, 0], atol=1e-6)
    np.testing.assert_allclose(rows["rul_cycles"], out[:, 0], atol=1e-6)


def test_bounds_the_training_truth_breaks_are_refused(tmp_path) -> None:
    config = load_config(_job(tmp_path, bounds={"rul_cycles": [10, None]}))
    with pytest.raises(ValueError, match="bounds.rul_cycles"):
        train("sensor", config)


def test_cqr_on_a_point_model_is_refused_and_off_keeps_the_band(tmp_path) -> None:
    from mfgtx._config import ConfigError

    path = _job(tmp_path, intervals="jackknife")
    with pytest.raises(ConfigError, match="intervals"):
        load_config(path)
    path = _job(tmp_path, coverage=1.5)
    with pytest.raises(ConfigError, match="coverage"):
        load_config(path)


@pytest.mark.parametrize(("block", "steps"), [(4, 4), (None, 2)])  # None: 8 steps / 5 lots
def test_a_forecaster_band_is_calibrated_per_step_and_channel(tmp_path, block, steps) -> None:
    sensors = pd.read_csv(SAMPLE / "sensors.csv", dtype=str, keep_default_na=False)
    lots = sensors["lot"].drop_duplicates().head(12)
    sensors = sensors[sensors["lot"].isin(lots)].groupby("lot", sort=False).head(120)
    sensors.to_csv(tmp_path / "sensors.csv", index=False)
    job = {
        "data": {
            "source": {"path": str(tmp_path / "sensors.csv")},
            "columns": {"lot": "lot", "time": "timestamp", "keys": ["line"],
                        "sensors": ["temperature_c", "pressure_bar", "vibration_mm_s"]},
        },
        "windows": {"window": 32, "stride": 16},
        "split": {"test_size": 3, "val_size": 5, "gap": "0s"},
        "forecast": {"horizon": 8, "targets": ["temperature_c", "pressure_bar"], "patch_len": 8,
                     "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16,
                     "quantiles": [0.1, 0.5, 0.9]},
        "train": {"epochs": 1, "batch_size": 16, "patience": None, "progress": "log"},
        "calibration": {"bounds": {"pressure_bar": [0, None]},
                        **({} if block is None else {"horizon_block": block})},
        "bundle": str(tmp_path / "models" / "forecast"),
    }  # fmt: skip
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    predictor = mfgtx.load(train("forecast", load_config(path)).bundle)
    cal = predictor.intervals
    assert cal.method == "cqr" and cal.shape == (8, 2) and cal.coverage == pytest.approx(0.8)
    m = cal.margins
    assert cal.lots == 5
    for start in range(0, 8, steps):  # one margin per block of `steps` steps and channel
        assert (m[start : start + steps] == m[start]).all()
    assert not (m == m[0]).all()  # ... not one for the whole horizon
    assert cal.lower == (None, 0.0)
    frame = pd.read_csv(tmp_path / "sensors.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    point, band = predictor.arrays(windows, idx)
    _, raw_band = ForecastPredictor(
        FORECAST, Trained(predictor.model), predictor.input_spec
    ).arrays(windows, idx)
    np.testing.assert_allclose(band[..., 0], cal.clip(raw_band[..., 0] - m), atol=1e-9)
    np.testing.assert_allclose(band[..., 2], cal.clip(raw_band[..., 2] + m), atol=1e-9)
    assert (band[..., 1, :] >= 0).all() and (point[..., 1] >= 0).all()
    rows = predictor.rows(windows, idx)
    assert (rows.loc[rows["sensor"] == "pressure_bar", ["q10", "q90"]] >= 0).all(axis=None)
    # the report: the calibrated band, the ridge baseline's, and the model's own quantiles
    together = [c for c in predictor.report.intervals if c.target is None]
    assert [c.method for c in together] == ["cqr", "conformal", "quantiles"]
    assert together[2].lots == together[0].lots and together[2].name == together[0].name


def test_the_onnx_export_carries_the_calibration_for_its_post_processing(
    rul_bundle, tmp_path
) -> None:
    pytest.importorskip("onnxruntime")
    from mfgtx.serving.onnx import export_onnx, load_onnx, model_inputs

    predictor = mfgtx.load(rul_bundle)
    onnx = load_onnx(export_onnx(predictor, tmp_path / "rul.onnx"))
    assert onnx.intervals == predictor.intervals
    frame = pd.read_csv(SAMPLE / "degradation.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    out = onnx.run(model_inputs(predictor, windows, idx))
    q = out["quantiles"].astype(np.float64)  # (B, K, Q) as trained
    low, high = onnx.intervals.apply(out["prediction"], q[:, :, 0], q[:, :, -1])
    rows = predictor.rows(windows, idx)
    np.testing.assert_allclose(low[:, 0], rows["rul_cycles_q10"], atol=1e-3)
    np.testing.assert_allclose(high[:, 0], rows["rul_cycles_q90"], atol=1e-3)


def test_a_regressor_calibrated_by_bins_of_its_prediction(tmp_path) -> None:
    """calibration.bins: one margin per range of the predicted remaining life, applied to the
    scored band by each window's own prediction (the ONNX record carries the edges too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few validation machines: no guarantee, said
        bundle = train("sensor", load_config(_job(tmp_path, bins=2))).bundle
    predictor = mfgtx.load(bundle)
    cal = predictor.intervals
    assert cal.bins == 2 and len(cal.edges) == 1 and cal.margin[0] != cal.margin[1]
    frame = pd.read_csv(SAMPLE / "degradation.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    _, q = predictor.outputs(windows, idx)
    rows = predictor.rows(windows, idx)
    point = rows["rul_cycles"].to_numpy()[:, None]
    margin = np.where(point > cal.edges[0], cal.margin[1], cal.margin[0])
    np.testing.assert_allclose(
        rows["rul_cycles_q10"], cal.clip(q[:, 0, :1] - margin)[:, 0], atol=1e-4
    )
