"""Shared helpers of the dashboard: configuration, bundles, data, uploads, error guard.

The app is thin: these helpers find inputs, call ``mfgtx`` and hand results to the pages.
Configuration, first match wins: environment variables ``MFGTX_MODELS_DIR`` and
``MFGTX_DATA_DIR``, then ``app/mfgtx-app.toml`` (or the file ``MFGTX_APP_CONFIG`` names) with
keys ``models_dir`` and ``data_dir``, then the defaults ``models/`` and ``sample_data/`` of the
repository (see :func:`app_config`).
"""

from __future__ import annotations

import io
import logging
import os
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
import torch

import mfgtx.explain  # noqa: F401  (registers the explainers of the bundled models)
from mfgtx.artifacts import Bundle, BundleError, load_bundle, verify_bundle
from mfgtx.calibration import class_probabilities
from mfgtx.data import ColumnMap, DataError, read_table
from mfgtx.jobs.score import bundle_columns, bundle_windows

log = logging.getLogger("mfgtx.app")

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "mfgtx-app.toml"
SENSOR_CLASS = "mfgtx.SensorEncoder"
FORECAST_CLASS = "mfgtx.CausalForecaster"
DEFECT_CLASS = "mfgtx.DefectViT"
MAX_CSV_MB = 50
MAX_IMAGE_MB = 10
MAX_IMAGE_PIXELS = 40_000_000
UNITS = {
    "temperature_c": "°C",
    "pressure_bar": "bar",
    "vibration_mm_s": "mm/s",
    "motor_current_a": "A",
    "load_pct": "%",
    "ambient_temp_c": "°C",
    "bearing_temp_c": "°C",
    "quality_value": "µm",
    "rul_cycles": "cycles",
}


# ----------------------------------------------------------------- configuration


@dataclass(frozen=True)
class AppConfig:
    models_dir: Path
    data_dir: Path
    source: str  # where the settings came from, shown on the Overview page


def app_config() -> AppConfig:
    """Models and data directories from env vars, the config file, or the defaults.

    The config file is ``MFGTX_APP_CONFIG`` or ``app/mfgtx-app.toml`` beside the dashboard,
    never one found in the working directory; relative paths in it are relative to the file,
    and the defaults (``models/``, ``sample_data/``) to the repository, so the dashboard reads
    the same folders whatever directory a service starts it in.
    """
    file_values: dict[str, Any] = {}
    path = Path(os.environ.get("MFGTX_APP_CONFIG") or Path(__file__).resolve().parent / CONFIG)
    base, source = ROOT, "defaults"
    if path.is_file():
        with path.open("rb") as f:
            file_values = tomllib.load(f)
        base, source = path.resolve().parent, str(path)

    def folder(env: str, key: str, default: str) -> Path:
        if os.environ.get(env):
            return Path(os.environ[env])
        if key in file_values:
            return base / str(file_values[key])
        return ROOT / default

    models = folder("MFGTX_MODELS_DIR", "models_dir", "models")
    data = folder("MFGTX_DATA_DIR", "data_dir", "sample_data")
    if "MFGTX_MODELS_DIR" in os.environ or "MFGTX_DATA_DIR" in os.environ:
        source = "environment" if source == "defaults" else f"environment and {source}"
    return AppConfig(models, data, source)


def guarded(body: Callable[[], None]) -> Callable[[], None]:
    """Run a page body; any exception is logged here and shown as a one-line message."""

    def page() -> None:
        try:
            body()
        except (DataError, BundleError) as e:  # worded for the user: file, column, lot
            log.warning("page %s: %s", body.__name__, e)
            st.error(str(e))
        except Exception:  # the browser never sees a traceback
            log.exception("page %s failed", body.__name__)
            st.error(
                "This page hit an internal error and stopped; the details are in the server "
                "log. Other pages keep working."
            )

    page.__name__ = body.__name__
    return page


# ----------------------------------------------------------------- bundles


@dataclass(frozen=True)
class BundleInfo:
    path: Path
    bundle_id: str
    model_class: str
    task: str | None
    manifest: dict[str, Any]
    signature: str = "unsigned"  # "verified", "unsigned" or "not verified" (no key here)


def find_bundles(models_dir: Path) -> tuple[list[BundleInfo], list[str]]:
    """Verified bundles under ``models_dir`` (one level deep), and a message per refused one."""
    found: list[BundleInfo] = []
    problems: list[str] = []
    if not models_dir.is_dir():
        return found, [f"models directory {models_dir} does not exist"]
    for sub in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        if not (sub / "manifest.json").is_file():
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                verified = verify_bundle(sub)
        except (BundleError, OSError, ValueError) as e:
            problems.append(f"{sub.name}: {e}")
            continue
        manifest = verified["manifest"]
        model = manifest.get("model", {})
        found.append(
            BundleInfo(
                path=sub,
                bundle_id=verified["bundle_id"],
                model_class=str(model.get("class")),
                task=model.get("config", {}).get("task"),
                manifest=manifest,
                signature=verified.get("signature", "unsigned"),
            )
        )
    return found, problems


def bundles_of(model_class: str) -> tuple[AppConfig, list[BundleInfo]]:
    cfg = app_config()
    found, _ = find_bundles(cfg.models_dir)
    return cfg, [b for b in found if b.model_class == model_class]


@st.cache_resource(max_entries=8, show_spinner="loading model bundle")
def _load(bundle_id: str, path: str) -> Bundle:
    bundle = load_bundle(path)
    bundle.model.eval()
    return bundle


def load(info: BundleInfo) -> Bundle:
    """The bundle's model, loaded once per bundle checksum (``bundle_id``)."""
    return _load(info.bundle_id, str(info.path))


def pick_bundle(infos: list[BundleInfo], key: str) -> BundleInfo:
    names = [b.path.name for b in infos]
    name = st.selectbox("Model bundle", names, key=key)
    return infos[names.index(name)]


def no_bundle_message(kind: str, models_dir: Path, command: str) -> None:
    st.info(f"No {kind} model bundle in {models_dir}; train one with `{command}`.")


# ----------------------------------------------------------------- data


@st.cache_data(show_spinner=False, max_entries=4, ttl=60)  # new rows show within a minute
def plant_frame(data_dir: str) -> pd.DataFrame:
    """Sensor rows joined with each lot's inspection (sample_data layout); defect = not passed."""
    sensors = pd.read_csv(Path(data_dir) / "sensors.csv")
    quality_file = Path(data_dir) / "quality.csv"
    if quality_file.is_file():
        quality = pd.read_csv(quality_file)
        sensors = sensors.merge(
            quality[["lot", "passed", "quality_value", "inspected_at"]], on="lot", how="left"
        )
        sensors["defect"] = (~sensors["passed"].astype(bool)).astype(int)
    return sensors


@st.cache_data(show_spinner=False, max_entries=8, ttl=60)
def _csv(path: str) -> pd.DataFrame:
    return pd.read_csv(path)


def frame_for(cmap: ColumnMap, data_dir: Path, *, need_targets: bool) -> pd.DataFrame:
    """The data-folder table holding the bundle's columns: the joined sensors and quality
    files (``plant_frame``) or any other CSV there (``degradation.csv`` for a RUL model)."""
    need = {cmap.lot, cmap.time, *cmap.keys, *cmap.sensors}
    if need_targets:
        need |= set(cmap.targets)
    candidates = []
    if (data_dir / "sensors.csv").is_file():
        candidates.append(lambda: plant_frame(str(data_dir)))
    for path in sorted(data_dir.glob("*.csv")):
        candidates.append(lambda path=path: _csv(str(path)))
    for load_frame in candidates:
        df = load_frame()
        if need <= set(df.columns):
            return df
    raise DataError(
        f"no CSV file in {data_dir} has the bundle's columns {sorted(need)}", column=None
    )


def read_upload_csv(upload: Any, cmap: ColumnMap) -> tuple[pd.DataFrame | None, str | None]:
    """An uploaded CSV checked by ``read_table`` against ``cmap`` (give it one without
    labels, :func:`~mfgtx.jobs.score.bundle_columns`): ``(frame, None)`` or ``(None, why)``."""
    if upload.size > MAX_CSV_MB * 2**20:
        size = upload.size / 2**20
        return None, f"{upload.name}: {size:.1f} MB is over the {MAX_CSV_MB} MB limit"
    try:
        df = pd.read_csv(io.BytesIO(upload.getvalue()))
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as e:
        return None, f"{upload.name}: not a readable CSV file ({e})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            read_table(df, cmap)
    except DataError as e:
        return None, f"{upload.name}: {e}"
    return df, None


def last_windows(
    bundle: Bundle, df: pd.DataFrame, *, with_targets: bool, stride: int | None = None
) -> tuple[Any, np.ndarray]:
    """Windows over ``df`` as ``mfgtx score`` makes them (:func:`mfgtx.jobs.score.bundle_windows`:
    the bundle's length and ``min_rows``, each lot's last window ending at its latest row),
    ``stride`` rows apart (default: the window length), and the index of each lot's last one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = read_table(df, bundle_columns(bundle, targets=with_targets))
        windows = bundle_windows(bundle, table, stride=stride or int(bundle.config.max_len))
    lots = windows.lot
    last = np.array([np.flatnonzero(lots == lot)[-1] for lot in windows.lots], dtype=np.int64)
    return windows, last


@dataclass(frozen=True)
class Predictions:
    lots: np.ndarray
    end: np.ndarray
    score: np.ndarray  # P(defect) for classifiers, the prediction for regression
    low: np.ndarray | None  # interval bounds (regression with quantiles)
    high: np.ndarray | None
    truth: np.ndarray | None
    x: torch.Tensor
    observed: torch.Tensor


@torch.no_grad()
def predict_lots(bundle: Bundle, windows: Any, idx: np.ndarray) -> Predictions:
    """Calibrated P(defect) (classification) or prediction with interval (regression)."""
    x, observed = windows.features(idx, bundle.scaler)
    xt, ot = torch.from_numpy(x), torch.from_numpy(observed)
    out = bundle.model(xt, ot).numpy()
    low = high = None
    if bundle.config.task == "classification":
        score = class_probabilities(out, bundle.calibration)[:, 1]
    else:
        score = out[:, 0]
        if bundle.config.quantiles:
            q = bundle.model.forward_quantiles(xt, ot).numpy()[:, 0]
            low, high = q[:, 0], q[:, -1]
    truth = None if windows.y is None else windows.y[idx, 0]
    return Predictions(windows.lot[idx], windows.end[idx], score, low, high, truth, xt, ot)


# ----------------------------------------------------------------- images


@dataclass(frozen=True)
class CheckedImage:
    name: str
    image: np.ndarray | None  # (H, W) grey in 0..1, or None
    message: str | None  # why the file was refused


def check_image(name: str, data: bytes) -> CheckedImage:
    """Open an uploaded image defensively: size, bombs, truncation, corrupt files, odd modes."""
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_IMAGE_MB * 2**20:
        return CheckedImage(name, None, f"{len(data) / 2**20:.1f} MB is over {MAX_IMAGE_MB} MB")
    if not data:
        return CheckedImage(name, None, "the file is empty")
    try:
        with warnings.catch_warnings():
            # Pillow warns above Image.MAX_IMAGE_PIXELS and raises above twice that: refuse both
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                img.verify()  # structure check; the image must be reopened after this
            with Image.open(io.BytesIO(data)) as img:
                if img.width * img.height > MAX_IMAGE_PIXELS:  # header only, nothing decoded
                    return CheckedImage(
                        name, None, f"{img.width}x{img.height} px is over {MAX_IMAGE_PIXELS:,} px"
                    )
                if img.width < 8 or img.height < 8:
                    return CheckedImage(name, None, f"{img.width}x{img.height} px is too small")
                img.load()
                arr = np.asarray(img.convert("F"), dtype=np.float64)  # any mode to grey
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return CheckedImage(name, None, "too many pixels (decompression bomb refused)")
    except UnidentifiedImageError:
        return CheckedImage(name, None, "not an image Pillow can read")
    except (OSError, ValueError, SyntaxError) as e:
        return CheckedImage(name, None, f"damaged or truncated image ({e})")
    if not np.isfinite(arr).all():
        return CheckedImage(name, None, "the image holds non-finite values")
    span = float(arr.max() - arr.min()) or 1.0
    return CheckedImage(name, (arr - arr.min()) / span, None)


# ----------------------------------------------------------------- charts


def sensor_figure(df: pd.DataFrame, time: str, sensors: list[str], title: str) -> Any:
    """One panel per sensor on a shared UTC time axis, units on each y axis."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=len(sensors), cols=1, shared_xaxes=True, vertical_spacing=0.03)
    dated = not pd.api.types.is_numeric_dtype(df[time])
    t = pd.to_datetime(df[time], utc=True) if dated else df[time]
    x_hover = "%{x|%Y-%m-%d %H:%M} UTC" if dated else f"{time} %{{x}}"
    for i, s in enumerate(sensors, start=1):
        unit = UNITS.get(s, "")
        fig.add_scatter(
            x=t,
            y=df[s],
            mode="lines",
            name=s,
            row=i,
            col=1,
            hovertemplate=f"{x_hover}<br>{s}: %{{y:.3f}} {unit}<extra></extra>",
        )
        fig.update_yaxes(title_text=f"{s} ({unit})" if unit else s, row=i, col=1)
    fig.update_xaxes(
        title_text="time (UTC)" if dated else time,
        type="date" if dated else "linear",
        row=len(sensors),
        col=1,
    )
    fig.update_layout(title=title, height=180 * len(sensors) + 80, showlegend=False)
    return fig
