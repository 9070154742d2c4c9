"""Fixtures of the dashboard tests: a tiny trained bundle in a temporary models directory."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "app" / "main.py"
SAMPLE = ROOT / "sample_data"


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir with one calibrated SensorEncoder bundle, trained by the same chain as
    ``benchmarks/sample_quality.py`` (split, audit, scaler, calibration, report), 1 epoch."""
    spec = importlib.util.spec_from_file_location(
        "sample_quality", ROOT / "benchmarks" / "sample_quality.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("models")
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split's PurgeWarning is expected on 36 lots
        rc = module.main([str(SAMPLE), "--epochs", "1", "--bundle", str(out / "sample_quality")])
    assert rc == 0
    return out


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, models_dir: Path) -> Path:
    """Point the app at the tiny bundle and sample_data; fresh caches for every AppTest."""
    import streamlit as st

    monkeypatch.setenv("MFGTX_MODELS_DIR", str(models_dir))
    monkeypatch.setenv("MFGTX_DATA_DIR", str(SAMPLE))
    monkeypatch.chdir(ROOT)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield models_dir
    st.cache_resource.clear()
    st.cache_data.clear()
