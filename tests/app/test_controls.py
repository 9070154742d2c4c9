"""Controls that do what they say, and trust beside every prediction (AppTests on the demo's
bundles): overlay opacity, the bounded forecast horizon and past origins, refused uploads,
defect decisions, the verdict against baselines and the lot's set and known label."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from .conftest import MAIN, SAMPLE
from .test_dashboard import INTERNAL, _texts

# slow: every page here reads the quick demo's bundles (the demo fixture trains four)
pytestmark = pytest.mark.slow

TRUST = "**How far to trust this prediction.**"


def _app(page: str, key: str | None = None, bundle: str | None = None) -> AppTest:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page(page).run()
    if key is not None:
        at.selectbox(key=key).set_value(bundle).run()
    assert not at.exception, at.exception
    assert not any(INTERNAL in t for t in _texts(at.error)), _texts(at.error)
    return at


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def _array(values) -> np.ndarray:
    """A plotly trace array, plain or base64-encoded (with its shape, for a 2-D one)."""
    if isinstance(values, dict):
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        if "shape" in values:
            shape = values["shape"]
            shape = [int(k) for k in shape.split(",")] if isinstance(shape, str) else shape
            return flat.reshape(shape)
        return flat
    return np.asarray(values, dtype=float)


def _trace(spec: dict, name: str) -> dict:
    return next(t for t in spec["data"] if t.get("name") == name)


def _boxes(at: AppTest) -> list[str]:
    return _texts(at.success) + _texts(at.warning) + _texts(at.error) + _texts(at.info)


# --------------------------------------------------------------------------- defects


def _defect_page(image: str = "defects/images/000.png") -> AppTest:
    at = _app("views/defects.py", "defect_bundle", "sample_defects")
    at.multiselect(key="defect_samples").set_value([image]).run()
    assert not at.exception, at.exception
    return at


def test_overlay_opacity_slider_changes_the_overlay(demo_env) -> None:
    at = _defect_page()
    overlay = next(s for s in _charts(at) if _trace_names(s) == ["image", "attention"])
    assert _trace(overlay, "attention")["opacity"] == 0.5
    image_before = _trace(overlay, "image")["z"]
    for value in (0.2, 0.9):
        at.slider(key="defect_opacity").set_value(value).run()
        overlay = next(s for s in _charts(at) if _trace_names(s) == ["image", "attention"])
        assert _trace(overlay, "attention")["opacity"] == value
    # the image under the map is the same: only the map's opacity moved
    assert _trace(overlay, "image")["z"] == image_before


def _trace_names(spec: dict) -> list[str | None]:
    return [t.get("name") for t in spec["data"]]


def test_defect_result_shows_p_defect_threshold_and_decision(demo_env) -> None:
    job = demo_env["jobs"]["sample_defects"][1]
    written = pd.read_parquet(job.score.output.path).set_index("image")
    at = _defect_page()
    row = written.loc["000.png"]  # scored from the images folder
    import mfgtx

    threshold = mfgtx.load(job.bundle).calibration.threshold.threshold
    text = " ".join(_texts(at.markdown))
    assert f"P(defect) **{row['p_defect']:.1%}**" in text, text
    assert f"the threshold {threshold:.1%}" in text, text
    verdict = "**flagged as defective**" if row["decision"] == "defect" else "**passed**"
    assert f"decision: {verdict}" in text, text


def test_defect_page_says_the_images_lot_set_and_known_label(demo_env) -> None:
    at = _defect_page("defects/images/000.png")  # lot D01, label inclusion (manifest.csv)
    captions = " ".join(_texts(at.caption))
    assert "Its lot D01 is a training lot" in captions, captions
    assert "Known label: inclusion." in captions
    assert any(t.startswith(TRUST) for t in _boxes(at))


def test_full_size_photo_shows_the_tile_heat_map_beside_the_worst_tiles_map(demo_env) -> None:
    import mfgtx

    job = demo_env["jobs"]["sample_inspection"][1]
    at = _app("views/defects.py", "defect_bundle", "sample_inspection")
    at.multiselect(key="defect_samples").set_value(["inspection/images/P01.png"]).run()
    assert not at.exception, at.exception
    predictor = mfgtx.load(job.bundle)
    data = (SAMPLE / "inspection" / "images" / "P01.png").read_bytes()
    tiles = predictor.score([("P01.png", data)], per_tile=True).rows
    charts = _charts(at)
    heat = next(
        s for s in charts if s["layout"].get("meta", {}).get("kind") == "model output per tile"
    )
    z = _array(_trace(heat, "P(defect)")["z"]).astype(float)
    assert z.shape == (360, 900)  # drawn over the full photo, not the model's tile size
    size = predictor.input_spec.tile_size
    for row in tiles.itertuples(index=False):  # every tile's P(defect) is drawn where it lies
        cell = z[row.top : row.top + size, row.left : row.left + size]
        assert cell.max() >= 100 * row.p_defect - 1e-6
    assert np.isclose(z.max(), 100 * tiles["p_defect"].max())
    threshold = predictor.calibration.threshold.threshold
    assert heat["layout"]["meta"]["flagged_tiles"] == int((tiles["p_defect"] > threshold).sum())
    # beside it, the attention map of the worst tile, and the opacity moves the heat map too
    assert any(_trace_names(s) == ["image", "attention"] for s in charts)
    at.slider(key="defect_opacity").set_value(0.9).run()
    heat = next(
        s for s in _charts(at) if s["layout"].get("meta", {}).get("kind") == "model output per tile"
    )
    assert _trace(heat, "P(defect)")["opacity"] == 0.9
    captions = " ".join(_texts(at.caption))
    assert "its worst tile's" in captions
    # the sample job scores every tile over its 8 views, and the caption says so
    assert predictor.input_spec.views == 8
    assert "each the mean of 8 views: as cut, flipped and turned a quarter" in captions
    assert "The attention map and the deletion test read the tile as cut, one view" in captions


# --------------------------------------------------------------------------- forecast


def _forecast_page() -> AppTest:
    return _app("views/forecast.py", "forecast_bundle", "sample_forecast")


def test_forecast_horizon_is_bounded_by_the_bundles_horizon(demo_env) -> None:
    import mfgtx

    horizon = mfgtx.load(demo_env["jobs"]["sample_forecast"][1].bundle).input_spec.horizon
    at = _forecast_page()
    slider = at.select_slider(key="forecast_horizon")
    assert len(slider.options) == horizon
    assert slider.options[-1].endswith(f"({horizon} readings)"), slider.options[-1]
    lengths = []
    for steps in (1, horizon // 2, horizon):
        at.select_slider(key="forecast_horizon").set_value(steps).run()
        spec = _charts(at)[0]
        lengths.append(len(_array(_trace(spec, "forecast")["y"])))
    assert lengths == [1, horizon // 2, horizon]  # every step of the control draws differently


def test_forecast_from_a_past_origin_draws_actuals_band_and_baseline(demo_env) -> None:
    at = _forecast_page()
    lot = at.selectbox(key="forecast_lot").value
    sensor = at.multiselect(key="forecast_sensors").value[0]
    spec = _charts(at)[0]
    assert "actual" not in _trace_names(spec), "nothing is known after the latest reading"
    origin = at.select_slider(key="forecast_origin")
    earlier = origin.value - 40
    origin.set_value(earlier).run()
    spec = _charts(at)[0]
    names = _trace_names(spec)
    import mfgtx

    predictor = mfgtx.load(demo_env["jobs"]["sample_forecast"][1].bundle)
    best = predictor.best_baseline  # the bundle keeps its best baseline, drawn by its name
    report = predictor.bundle.manifest["metrics"]
    rows = [r for r in report["rows"] if r["kind"] == "baseline"]
    top = min(rows, key=lambda r: r["metrics"][report["primary"]])
    assert best is not None and best == top["name"], (best, rows)
    from mfgtx.baselines import baseline_words

    legend = f"baseline: {baseline_words(best)}"  # named in plant words, as the verdict names it
    assert {"actual", "forecast", "quantile band", legend} <= set(names), names
    frame = pd.read_csv(SAMPLE / "sensors.csv")
    history = frame[frame["lot"] == lot].reset_index(drop=True)
    actual = _array(_trace(spec, "actual")["y"])
    steps = len(_array(_trace(spec, "forecast")["y"]))
    expected = history[sensor].iloc[earlier + 1 : earlier + 1 + steps].to_numpy()
    assert np.allclose(actual, expected)
    windows = predictor.windows(history.iloc[: earlier + 1])  # as the page cuts them
    expected = predictor.baseline_arrays(windows, np.array([len(windows) - 1]))
    k = list(predictor.input_spec.targets).index(sensor)
    drawn = _array(_trace(spec, legend)["y"])
    assert np.allclose(drawn, expected[0, :steps, k])
    captions = " ".join(_texts(at.caption))
    assert "nominally 80 in 100 actual readings fall inside it" in captions, captions
    assert "inside the band" in captions


def test_forecast_page_says_how_far_to_trust_it(demo_env) -> None:
    at = _forecast_page()
    boxes = [t for t in _boxes(at) if t.startswith(TRUST)]
    assert boxes and "repeating the last reading" in boxes[0], boxes  # it ties with Naive
    lot = at.selectbox(key="forecast_lot").value
    assert any(t.startswith(f"Lot {lot} is a ") for t in _texts(at.markdown))


# --------------------------------------------------------------------------- quality & RUL


def test_quality_page_shows_trust_set_and_known_result(demo_env) -> None:
    at = _app("views/quality.py", "quality_bundle", "sample_quality")
    assert any(t.startswith(TRUST) for t in _boxes(at))
    manifest = json.loads(
        (Path(demo_env["jobs"]["sample_quality"][1].bundle) / "manifest.json").read_text()
    )
    test_lot = manifest["audit"]["summary"]["sets"]["test"]["lots"][0]
    at.selectbox(key="quality_line").set_value(test_lot.split("-")[0]).run()
    at.selectbox(key="quality_lot").set_value(test_lot).run()
    assert any(t.startswith(f"Lot {test_lot} is a test lot") for t in _texts(at.markdown))
    passed = pd.read_csv(SAMPLE / "quality.csv").set_index("lot").loc[test_lot, "passed"]
    word = "good (passed inspection)" if passed else "bad (a defect was found)"
    assert f"Known result: lot {test_lot} was inspected {word}." in _texts(at.caption)


def test_rul_page_warns_when_a_baseline_beats_the_model(demo_env) -> None:
    import mfgtx

    at = _app("views/quality.py", "quality_bundle", "sample_rul")
    report = mfgtx.load(demo_env["jobs"]["sample_rul"][1].bundle).bundle.manifest["metrics"]
    d = report["differences"][0]
    worse = d["low"] > 0  # rmse: lower is better
    boxes = [t for t in _boxes(at) if t.startswith(TRUST)]
    assert boxes
    assert ("Do not rely on it." in boxes[0]) == worse, (boxes, d)
    assert (boxes[0] in _texts(at.error)) == worse, "a model a baseline beats is red"
    # sensor tokens: the map's axis names the sensors, and the deletion test is in cycles
    # or the target's unit, never "class 1"
    attention = next(s for s in _charts(at) if s["layout"]["title"]["text"].startswith("Attention"))
    job = demo_env["jobs"]["sample_rul"][1]
    predictor = mfgtx.load(job.bundle)
    sensors = list(predictor.columns.sensors)
    assert list(predictor.channel_names) == sensors
    units = dict(job.data.columns.units)  # as the job file gives them
    named = [f"{s} ({units[s]})" for s in sensors]  # every sensor has a unit there
    assert list(attention["data"][0]["x"]) == named
    deletion = next(s for s in _charts(at) if s["layout"]["title"]["text"].startswith("Deletion"))
    assert deletion["layout"]["yaxis"]["title"]["text"].endswith("(cycles)")
    # a point outside its own interval is said, never shown as if it were fine
    m = re.fullmatch(r"(-?[\d.]+) cycles \(interval (-?[\d.]+) to (-?[\d.]+)\)", at.metric[0].value)
    point, low, high = (float(v) for v in m.groups())
    outside = not low <= point <= high
    warned = any("outside its own interval" in t for t in _texts(at.warning))
    assert warned == outside, (at.metric[0].value, _texts(at.warning))
    as_of = at.select_slider(key="quality_as_of")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", as_of.options[-1]), as_of.options[-1]


# --------------------------------------------------------------------------- overview


def test_overview_speaks_plant_words(demo_env) -> None:
    at = _app("views/overview.py")
    frames = [d.value for d in at.dataframe]
    bundles = next(f for f in frames if "bundle" in f.columns)
    assert bundles["task"].notna().all() and "None" not in set(bundles["task"].astype(str))
    tasks = dict(zip(bundles["bundle"], bundles["task"], strict=True))
    assert tasks["sample_forecast"] == "forecast" and tasks["sample_defects"] == "classification"
    metrics = [f for f in frames if "predictor" in f.columns]
    assert metrics and all(
        c.endswith((" ↑", " ↓"))
        for f in metrics
        for c in f.columns
        if c not in ("predictor", "kind", "in words")
    )
    audits = [f for f in frames if "check" in f.columns]
    details = " ".join(" ".join(f["detail"]) for f in audits)
    assert "the gap (30 min)" in details and "days 00:" not in details, details
    assert "each of the 200 images is in one set only" in details, details  # not "windows"
    assert "each of the 16 photos is in one set only" in details, details
    texts = _texts(at.markdown)
    assert any(t.startswith("Judged on 60 test images from 3 test lots") for t in texts), texts
    assert not any("Test windows" in t for t in texts)


def test_rul_page_shows_the_machines_known_rul_from_its_data(demo_env) -> None:
    at = _app("views/quality.py", "quality_bundle", "sample_rul")
    machine = at.selectbox(key="quality_lot").value
    at.select_slider(key="quality_as_of").set_value(
        at.select_slider(key="quality_as_of").options[3]
    )
    at.run()
    known = next(t for t in _texts(at.caption) if t.startswith("Known rul_cycles at "))
    m = re.match(r"Known rul_cycles at (\S+ \S+) UTC: ([\d.]+) cycles\.$", known)
    assert m, known
    # the truth at the very reading the prediction is made as of, never another reading's
    assert f"{m.group(1)} UTC" == at.select_slider(key="quality_as_of").value
    rows = pd.read_csv(SAMPLE / "degradation.csv")
    rows = rows[rows["machine"] == machine]
    at_time = pd.to_datetime(rows["timestamp"], utc=True).dt.strftime("%Y-%m-%d %H:%M")
    assert float(rows.loc[at_time == m.group(1), "rul_cycles"].iloc[0]) == float(m.group(2))
