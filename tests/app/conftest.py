"""Fixtures of the dashboard tests: a tiny trained bundle in a temporary models directory."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "app" / "dashboard.py"
SAMPLE = ROOT / "sample_data"


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir with one calibrated SensorEncoder bundle trained by the sample job file
    (``pipelines/configs/sample_quality.yaml``: split, audit, scaler, calibration, report,
    its job recorded), 1 epoch."""
    import os

    from mfgtx.jobs import load_config, train

    out = tmp_path_factory.mktemp("models")
    job = ROOT / "pipelines" / "configs" / "sample_quality.yaml"
    overrides = ["train.epochs=1", "train.progress=off", f"bundle={out / 'sample_quality'}"]
    here = os.getcwd()
    os.chdir(ROOT)  # the job file's paths are relative to the repository
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the split's PurgeWarning is expected on 36 lots
            train("sensor", load_config(job, overrides))
    finally:
        os.chdir(here)
    return out


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, models_dir: Path) -> Path:
    """Point the app at the tiny bundle and sample_data; fresh caches for every AppTest."""
    import streamlit as st
    from streamlit import config

    monkeypatch.setenv("MFGTX_MODELS_DIR", str(models_dir))
    monkeypatch.setenv("MFGTX_DATA_DIR", str(SAMPLE))
    monkeypatch.chdir(ROOT)
    before = st.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")  # as app/.streamlit/config.toml binds it
    st.cache_resource.clear()
    st.cache_data.clear()
    yield models_dir
    config.set_option("server.address", before)
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture(scope="session")
def rul_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir with one RUL SensorEncoder (quantile interval) on degradation.csv, 1 epoch."""
    return _rul_models_dir(tmp_path_factory, min_rows=None)


@pytest.fixture(scope="session")
def rul_history_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As :func:`rul_models_dir`, trained on history windows (``min_rows=5``, as a job file's
    ``windows.min_rows`` would)."""
    return _rul_models_dir(tmp_path_factory, min_rows=5)


def _rul_models_dir(tmp_path_factory: pytest.TempPathFactory, *, min_rows: int | None) -> Path:
    import numpy as np
    import pandas as pd
    import torch

    from mfgtx.data import ColumnMap, SensorScaler, WindowDataset, make_windows, read_table
    from mfgtx.models import SensorEncoder, SensorEncoderConfig
    from mfgtx.train import TrainConfig, fit

    cols = ColumnMap(
        lot="machine",
        time="cycle",
        targets="rul_cycles",
        sensors=("load_pct", "ambient_temp_c", "vibration_mm_s", "motor_current_a"),
    )
    table = read_table(pd.read_csv(SAMPLE / "degradation.csv"), cols)
    windows = make_windows(table, 20, stride=10, min_rows=min_rows)
    train = np.flatnonzero(np.isin(windows.lot, windows.lots[:10]))  # split by machine
    val = np.flatnonzero(~np.isin(windows.lot, windows.lots[:10]))
    scaler = SensorScaler.fit(windows, train)
    torch.manual_seed(0)
    model = SensorEncoder(
        SensorEncoderConfig(
            n_channels=4, max_len=20, task="regression", n_outputs=1, patch_len=5, d_model=16,
            n_heads=2, n_layers=1, d_ff=32, quantiles=(0.1, 0.9), target_scale=125.0,
        )
    )  # fmt: skip
    config = TrainConfig(epochs=1, batch_size=64, lr=1e-3, seed=0, progress="off")
    fit(model, WindowDataset(windows, train, scaler), WindowDataset(windows, val, scaler), config)
    out = tmp_path_factory.mktemp("rul_models")
    from mfgtx.data import Windowing
    from mfgtx.kinds import SensorSpec
    from tests.bundles import save

    spec = SensorSpec(
        columns=cols, windowing=Windowing(window=20, stride=10, min_rows=min_rows),
        task="regression", targets=("rul_cycles",), time_kind="number", scaler=scaler,
    )  # fmt: skip
    save(out / "sample_rul", model, spec=spec, train_config=config)
    return out


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The quick demo's four bundles and scores (the sample job files, tiny models)."""
    import os

    from mfgtx.jobs.demo import demo_jobs, run_demo

    out = tmp_path_factory.mktemp("demo")
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            steps = list(run_demo(SAMPLE, out, quick=True))
        jobs = demo_jobs(SAMPLE, out, quick=True)
    finally:
        os.chdir(here)
    assert {s["job"] for s in steps if s.get("command") == "score"} == set(jobs)
    return {"out": out, "jobs": jobs}


@pytest.fixture
def demo_env(demo: dict, app_env: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The app pointed at the demo's bundles."""
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(demo["out"] / "models"))
    return demo
