"""AppTests of every dashboard page on sample_data with a tiny trained bundle."""

from __future__ import annotations

import io
import json
import struct
import zlib

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from mfgtx.baselines import baseline_words, model_words
from mfgtx.explain import KIND, NOTICE

from .conftest import MAIN, SAMPLE

PAGES = [
    "views/overview.py",
    "views/quality.py",
    "views/forecast.py",
    "views/defects.py",
    "views/evaluation.py",
    "views/score.py",
    "views/plant.py",
    "views/compare.py",
]
INTERNAL = "internal error"


def _app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    if page is not None:
        at.switch_page(page).run()
    return at


def _texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def _specs(at: AppTest) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def _clean(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not any(INTERNAL in t for t in _texts(at.error)), _texts(at.error)


def _png(size: tuple[int, int] = (32, 24), mode: str = "RGB") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, 128).save(buf, "PNG")
    return buf.getvalue()


def _bomb_png(width: int = 30_000, height: int = 30_000) -> bytes:
    """A valid tiny PNG whose header claims a huge image (nothing decoded to find out)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00" * (width + 1))  # one row only: truncated if ever decoded
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_sample_data(app_env, page):
    at = _app(page)
    _clean(at)
    assert at.title, "each page has a title"


def test_overview_lists_bundle_metrics_audit_and_data(app_env):
    at = _app("views/overview.py")
    _clean(at)
    frames = [df.value for df in at.dataframe]
    assert any("sample_quality" in set(f.get("bundle", [])) for f in frames)
    predictors = next(f for f in frames if "predictor" in f.columns)["predictor"].tolist()
    assert predictors[0] == model_words("SensorEncoder")  # in words, not the class names
    assert baseline_words("MajorityClass") in predictors
    assert any("Split audit: **passed**" in t for t in _texts(at.markdown))
    how_sure = [t for t in _texts(at.markdown) if t.startswith("How sure: ")]
    assert how_sure and "paired bootstrap interval over the" in how_sure[0]
    # one verdict, the library's standing in its colour; no second verdict line beside it
    boxes = _texts(at.success) + _texts(at.warning) + _texts(at.error) + _texts(at.info)
    verdicts = [t for t in boxes if t.startswith("**Verdict.**")]
    assert len(verdicts) == 1, boxes
    assert not any(t.startswith("Verdict:") for t in _texts(at.markdown))
    assert "SensorEncoder" not in verdicts[0] and "MajorityClass" not in how_sure[0]
    files = next(f for f in frames if "file" in f.columns).set_index("file")
    newest = pd.to_datetime(pd.read_csv(SAMPLE / "sensors.csv")["timestamp"], utc=True).max()
    assert files.loc["sensors.csv", "newest reading (UTC)"] == newest.strftime("%Y-%m-%d %H:%M")
    age = (pd.Timestamp.now(tz="UTC") - newest).total_seconds() / 86400
    assert abs(files.loc["sensors.csv", "data age (days)"] - age) < 0.2  # not the file's mtime
    latest = next(f for f in frames if "latest reading (UTC)" in f.columns)
    assert latest["line"].tolist() == ["L1", "L2", "L3"]  # read by mfgtx.data.io, per line


def test_quality_widgets_change_lot_and_what_if_decision(app_env):
    at = _app("views/quality.py")
    _clean(at)
    assert _specs(at)[0]["layout"]["title"]["text"] == "Sensors of lot L1-0001"
    sensor_axes = [
        v["title"]["text"] for k, v in _specs(at)[0]["layout"].items() if k.startswith("yaxis")
    ]
    assert "temperature_c (°C)" in sensor_axes and "pressure_bar (bar)" in sensor_axes
    at.selectbox(key="quality_line").set_value("L2").run()
    at.selectbox(key="quality_lot").set_value("L2-0010").run()
    _clean(at)
    assert _specs(at)[0]["layout"]["title"]["text"] == "Sensors of lot L2-0010"
    at.slider(key="quality_threshold").set_value(0.0).run()
    assert any("**flag for inspection**" in t for t in _texts(at.markdown))
    at.slider(key="quality_threshold").set_value(1.0).run()
    assert any("**pass**" in t for t in _texts(at.markdown))


def test_every_attention_figure_carries_the_notice_once_and_off_the_axes(app_env):
    at = _app("views/quality.py")
    _clean(at)
    diagnostics = [s for s in _specs(at) if KIND in s["layout"]["title"]["text"]]
    assert len(diagnostics) == 2, "the attention map and its deletion test"
    for spec in diagnostics:
        assert spec["layout"]["meta"]["kind"] == KIND
        assert spec["layout"]["meta"]["notice"] == NOTICE
        notes = " ".join(a["text"] for a in spec["layout"].get("annotations", []))
        assert "non-causal" not in notes, "the notice is never drawn over a chart"
    shown = [t for t in _texts(at.caption) if NOTICE in t]
    assert len(shown) == 1, shown  # once for the section


def test_bad_csv_gives_a_message_with_its_line_and_draws_nothing(app_env):
    at = _app("views/quality.py")
    bad = b"line,lot,timestamp,temperature_c,pressure_bar,vibration_mm_s,motor_current_a\n"
    bad += b"L1,L1-0001,2026-03-02T07:22:00+00:00,180,5,2,12\n"
    bad += b"L1,L1-0001,2026-03-02T07:23:00+00:00,hot,5,2,12\n"  # line 3 of the file
    at.file_uploader(key="quality_upload").set_value(("bad.csv", bad, "text/csv")).run()
    _clean(at)
    errors = _texts(at.error)
    assert any(e.startswith("Upload refused: bad.csv line 3") for e in errors), errors
    assert not any("DataFrame" in e for e in errors), errors
    assert not _specs(at), "a refused upload leaves no chart of other data"
    assert not at.metric, "and no prediction"


def test_defect_page_checks_each_image_and_says_no_bundle(app_env, tmp_path):
    at = _app("views/defects.py")
    _clean(at)
    assert any("No defect model bundle in" in t and "mfgtx demo" in t for t in _texts(at.info))
    good, odd = _png(), _png(mode="I;16")
    files = [
        ("good.png", good, "image/png"),
        ("odd-mode.png", odd, "image/png"),
        ("corrupt.png", b"\x89PNG\r\n\x1a\nthis is not a png", "image/png"),
        ("truncated.png", good[: len(good) // 2], "image/png"),
        ("bomb.png", _bomb_png(), "image/png"),
    ]
    at.file_uploader(key="defect_uploads").set_value(files).run()
    _clean(at)
    errors, ok = _texts(at.error), _texts(at.success)
    assert any(t.startswith("good.png:") for t in ok), ok
    # 16-bit grey is refused, as mfgtx score refuses it (the same reader)
    assert any(t.startswith("odd-mode.png: unexpected mode 'I;16'") for t in errors), errors
    for name in ("corrupt.png", "truncated.png", "bomb.png"):
        assert any(t.startswith(f"{name}:") for t in errors), (name, errors)
    assert not any("Pillow" in t for t in errors), errors  # no library names
    assert len(_specs(at)) == 1  # the readable image is drawn
    at.slider(key="defect_opacity").set_value(0.2).run()
    _clean(at)


def test_forecast_page_says_when_there_is_no_forecaster(app_env):
    at = _app("views/forecast.py")
    _clean(at)
    assert any("No forecaster model bundle in" in t for t in _texts(at.info))


def test_evaluation_threshold_moves_the_confusion_matrix(app_env):
    at = _app("views/evaluation.py")
    _clean(at)
    titles = [s["layout"]["title"]["text"] for s in _specs(at)]
    assert titles[:2] == ["Confusion matrix (lots)", "Calibration curve"]
    assert any(t.startswith("Residuals over time") for t in titles)
    at.slider(key="eval_threshold").set_value(1.0).run()
    z = np.array(_specs(at)[0]["data"][0]["z"])
    assert z[:, 1].sum() == 0  # nothing above a threshold of 1
    at.slider(key="eval_threshold").set_value(0.0).run()
    z = np.array(_specs(at)[0]["data"][0]["z"])
    assert z[:, 0].sum() == 0


def test_empty_models_dir_gives_clear_messages(app_env, monkeypatch, tmp_path):
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    for page, words in [
        ("views/quality.py", "No sensor (lot quality or RUL) model bundle"),
        ("views/evaluation.py", "No sensor (lot quality or RUL) model bundle"),
        ("views/overview.py", "No model bundles"),
    ]:
        at = _app(page)
        _clean(at)
        assert any(words in t for t in _texts(at.info)), (page, _texts(at.info))


def test_corrupted_bundle_is_refused_with_a_message(app_env, monkeypatch, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(app_env / "sample_quality", broken)
    weights = broken / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    at = _app("views/overview.py")
    _clean(at)
    assert any(t.startswith("Refused bundle: broken") for t in _texts(at.warning))


def test_config_file_sets_the_directories(app_env, monkeypatch, tmp_path):
    monkeypatch.delenv("MFGTX_MODELS_DIR")
    monkeypatch.delenv("MFGTX_DATA_DIR")
    config = tmp_path / "mfgtx-app.toml"
    config.write_text(f'models_dir = "{app_env}"\ndata_dir = "{SAMPLE}"\n')
    monkeypatch.setenv("MFGTX_APP_CONFIG", str(config))
    at = _app("views/overview.py")
    _clean(at)
    assert any(str(config) in t for t in _texts(at.caption))
    assert any("sample_quality" in set(df.value.get("bundle", [])) for df in at.dataframe)


def test_password_sign_in_from_secrets(app_env):
    at = AppTest.from_file(str(MAIN), default_timeout=180)
    at.secrets["app_password"] = "s3cret-password"
    at.run()
    assert not at.exception and not at.dataframe  # nothing shown before sign-in
    at.text_input[0].input("wrong")
    at.button[0].click().run()
    assert "Wrong password." in _texts(at.error)
    at.text_input[0].input("s3cret-password")
    at.button[0].click().run()
    _clean(at)
    assert _texts(at.title) == ["Plant"]  # the first page
    at.switch_page("views/overview.py").run()
    assert any(df.value.shape[0] for df in at.dataframe)


def test_rul_bundle_shows_interval_and_per_machine_errors(app_env, monkeypatch, rul_models_dir):
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(rul_models_dir))
    at = _app("views/quality.py")
    _clean(at)
    metric = at.metric[0]
    assert metric.label == "Predicted rul_cycles" and "interval" in metric.value
    spec = _specs(at)[0]
    assert spec["layout"]["xaxis4"]["title"]["text"] == "cycle"  # cycles, not dates
    first = metric.value
    slider = at.select_slider(key="quality_as_of")
    # the default is the machine's latest cycle, though the stride steps over it
    machines = pd.read_csv(SAMPLE / "degradation.csv")
    lot = at.selectbox(key="quality_lot").value
    latest = machines.loc[machines["machine"] == lot, "cycle"].max()
    assert slider.options[-1] == f"cycle {latest:g}"
    slider.set_value(slider.options[0]).run()
    _clean(at)
    assert at.metric[0].value != first  # predicting earlier in the machine's life
    at.switch_page("views/evaluation.py").run()  # saved from Python: no job, no labels
    _clean(at)
    assert any("records no training job" in t for t in _texts(at.error)), _texts(at.error)


def test_a_history_bundle_predicts_from_the_machines_first_rows(
    app_env, monkeypatch, rul_history_models_dir
):
    """A bundle trained with ``windows.min_rows`` is windowed the same way on the page: the
    first prediction is as of the machine's 5th cycle, before a full 20-cycle window."""
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(rul_history_models_dir))
    at = _app("views/quality.py")
    _clean(at)
    slider = at.select_slider(key="quality_as_of")
    assert slider.options[0] == "cycle 5"  # (the plain bundle's first is cycle 20)
    slider.set_value("cycle 5").run()
    _clean(at)
    assert at.metric[0].label == "Predicted rul_cycles" and "interval" in at.metric[0].value


def test_streamlit_config_has_the_plant_network_settings():
    import tomllib

    from .conftest import ROOT

    config = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["showErrorDetails"] == "none"
    server = config["server"]
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert 0 < server["maxUploadSize"] <= 200
    assert server["address"] == "127.0.0.1"


def test_open_network_bind_without_sign_in_shows_nothing(app_env, monkeypatch):
    import streamlit as st
    from streamlit import config

    monkeypatch.delenv("MFGTX_APP_NO_AUTH", raising=False)
    before = st.get_option("server.address")  # also loads .streamlit/config.toml first
    config.set_option("server.address", "0.0.0.0")
    try:
        at = _app()
    finally:
        config.set_option("server.address", before)
    assert not at.exception and not at.dataframe
    assert any("no sign-in is configured" in t for t in _texts(at.error))


def test_good_csv_upload_replaces_the_sample_data(app_env):
    import pandas as pd

    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    one_lot = sensors[sensors["lot"] == "L3-0004"].to_csv(index=False).encode()
    at = _app("views/quality.py")
    at.file_uploader(key="quality_upload").set_value(("line3.csv", one_lot, "text/csv")).run()
    _clean(at)
    assert not at.error
    assert any(t.startswith("Lot L3-0004 is a ") for t in _texts(at.markdown))
    assert at.selectbox(key="quality_lot").options == ["L3-0004"]
    assert _specs(at)[0]["layout"]["title"]["text"] == "Sensors of lot L3-0004"


def test_evaluation_says_when_the_training_data_is_gone(app_env, monkeypatch, tmp_path):
    """The Evaluation page reads the bundle's labelled data with its recorded job; a job whose
    data is no longer there is named in one line, and the other pages keep working."""
    import shutil

    from tests.hardening.test_signing import _reforge  # edits the manifest, re-checksums

    moved = tmp_path / "models" / "sample_quality"
    shutil.copytree(app_env / "sample_quality", moved)

    def gone(manifest):
        manifest["extra"]["job_file"]["data"]["source"]["path"] = str(tmp_path / "gone.csv")

    _reforge(moved, gone)
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path / "models"))
    at = _app("views/evaluation.py")
    _clean(at)
    assert any("data file not found" in t and "gone.csv" in t for t in _texts(at.error))
    at.switch_page("views/quality.py").run()  # predicting needs no labels
    _clean(at)
    assert not at.error and at.metric
