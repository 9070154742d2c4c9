"""Forecast: sensor history, and the forecast with its quantile band from a forecaster bundle.

Model-specific code is :func:`forecast_band` only (``mfgtx.CausalForecaster`` through the
library's :func:`mfgtx.jobs.forecast.forecast_arrays`, the same code as batch scoring);
everything else works from the data and the bundle's manifest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from _common import (
    FORECAST_CLASS,
    UNITS,
    bundles_of,
    guarded,
    load,
    no_bundle_message,
    pick_bundle,
    plant_frame,
)

from mfgtx.data import ColumnMap, make_windows, read_table
from mfgtx.jobs.forecast import forecast_arrays

SENSORS = ["temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a"]


def forecast_band(bundle, history: pd.DataFrame, sensor: str, horizon: int) -> pd.DataFrame:
    """Columns ``time, median, low, high`` for the next ``horizon`` minutes of ``sensor`` (at
    most the model's own horizon), from the last ``context_length`` rows of the lot.

    The band is the model's outer quantiles when it was trained with quantiles, else none
    (``low``/``high`` equal the point forecast). Raises ``ValueError`` with a message for
    the page when the lot is too short or the bundle does not forecast ``sensor``.
    """
    c = bundle.config
    schema = bundle.manifest.get("data_schema") or {}
    channels = list(schema.get("sensors") or SENSORS)
    job = (bundle.manifest.get("extra") or {}).get("job") or {}
    targets = list(job.get("targets") or channels)  # the rest of channels: past covariates
    if sensor not in targets:
        raise ValueError(f"this forecaster forecasts {targets}, not {sensor!r}")
    missing = [ch for ch in channels if ch not in history.columns]
    if missing:
        raise ValueError(f"the data has no column(s) {missing}, which this forecaster reads")
    if len(history) < c.context_length:
        raise ValueError(
            f"the lot has {len(history)} readings; this forecaster needs the last "
            f"{c.context_length}"
        )
    # the lot's last window, read and scaled exactly as in training and batch scoring
    cols = ColumnMap(lot="lot", time="timestamp", sensors=tuple(channels))
    table = read_table(history[["lot", "timestamp", *channels]].reset_index(drop=True), cols)
    windows = make_windows(table, c.context_length, stride=1)
    point, bands = forecast_arrays(
        bundle.model, bundle.scaler, windows, np.array([len(windows) - 1]), targets
    )
    t = pd.to_datetime(history["timestamp"], utc=True)
    step = t.diff().median()
    minutes = max(step / pd.Timedelta(minutes=1), 1e-9)
    j, steps = targets.index(sensor), max(1, min(round(horizon / minutes), c.horizon))
    median = point[0, :steps, j]
    low = bands[0, :steps, j, 0] if bands is not None else median
    high = bands[0, :steps, j, -1] if bands is not None else median
    times = t.iloc[-1] + step * np.arange(1, steps + 1)
    return pd.DataFrame({"time": times, "median": median, "low": low, "high": high})


def _figure(history: pd.DataFrame, sensor: str, band: pd.DataFrame | None) -> go.Figure:
    unit = UNITS.get(sensor, "")
    fig = go.Figure()
    fig.add_scatter(
        x=pd.to_datetime(history["timestamp"], utc=True),
        y=history[sensor],
        mode="lines",
        name="history",
        hovertemplate=f"%{{x|%Y-%m-%d %H:%M}} UTC<br>%{{y:.3f}} {unit}<extra></extra>",
    )
    if band is not None:
        fig.add_scatter(
            x=band["time"],
            y=band["high"],
            mode="lines",
            line={"width": 0},
            name="upper quantile",
            showlegend=False,
        )
        fig.add_scatter(
            x=band["time"],
            y=band["low"],
            mode="lines",
            line={"width": 0},
            fill="tonexty",
            name="quantile band",
        )
        fig.add_scatter(x=band["time"], y=band["median"], mode="lines", name="forecast")
    fig.update_layout(
        title=f"{sensor}",
        xaxis_title="time (UTC)",
        yaxis_title=f"{sensor} ({unit})",
        hovermode="x unified",
    )
    return fig


@guarded
def forecast() -> None:
    st.title("Forecast")
    cfg, infos = bundles_of(FORECAST_CLASS)
    if not (cfg.data_dir / "sensors.csv").is_file():
        st.warning(f"No sensors.csv in the data directory {cfg.data_dir}.")
        return
    df = plant_frame(str(cfg.data_dir))
    lot = st.selectbox("Lot", list(dict.fromkeys(df["lot"].astype(str))), key="forecast_lot")
    chosen = st.multiselect("Sensors", SENSORS, default=SENSORS[:1], key="forecast_sensors")
    horizon = st.slider("Horizon (minutes)", 5, 120, 30, 5, key="forecast_horizon")
    history = df[df["lot"].astype(str) == lot]
    bundle = None
    if not infos:
        no_bundle_message("forecaster", cfg.models_dir, "mfgtx demo")
    else:
        bundle = load(pick_bundle(infos, "forecast_bundle"))
    for sensor in chosen:
        band = None
        if bundle is not None:
            try:
                band = forecast_band(bundle, history, sensor, horizon)
            except ValueError as e:
                st.warning(str(e))
        st.plotly_chart(_figure(history, sensor, band))


forecast()
