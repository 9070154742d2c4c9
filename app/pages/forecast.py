"""Forecast: sensor history, and the forecast with its quantile band from a forecaster bundle.

Model-specific code is :func:`forecast_band` only; everything else works from the data and the
bundle's manifest, so wiring ``mfgtx.CausalForecaster`` in after its merge is a change there.
"""

from __future__ import annotations

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

SENSORS = ["temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a"]


def forecast_band(bundle, history: pd.DataFrame, sensor: str, horizon: int) -> pd.DataFrame:
    """Columns ``time, median, low, high`` for the next ``horizon`` steps of ``sensor``.

    To be wired to ``mfgtx.CausalForecaster`` once it is merged (its prediction API is not on
    this branch yet).
    """
    raise NotImplementedError(
        f"{bundle.manifest['model']['class']} bundles are not wired into the dashboard yet"
    )


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
        no_bundle_message("forecaster", cfg.models_dir, "mfgtx train forecast")
    else:
        bundle = load(pick_bundle(infos, "forecast_bundle"))
    for sensor in chosen:
        band = None
        if bundle is not None:
            try:
                band = forecast_band(bundle, history, sensor, horizon)
            except NotImplementedError as e:
                st.warning(str(e))
        st.plotly_chart(_figure(history, sensor, band))


forecast()
