"""A historian's trend of one prediction: the values over time, their interval band, the
actuals where they arrived, and the plant's limit lines; and a verdict's colour.

The frames are :func:`mfgtx.history.plant.trend`'s; nothing here queries or judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from mfgtx.jobfile import Limit

#: Each verdict level's colour and mark, as the trust boxes colour them (red, amber, green,
#: blue for "nothing to judge by").
LEVEL_COLOURS = {"alarm": "red", "flag": "red", "check": "orange", "ok": "green", "none": "blue"}
LEVEL_MARKS = {"alarm": ":material/error:", "flag": ":material/error:",
               "check": ":material/warning:", "ok": ":material/check_circle:",
               "none": ":material/info:"}  # fmt: skip
#: A verdict cell's background in a table, by level (light shades of the same colours).
LEVEL_CELLS = {"alarm": "#ffd6d6", "flag": "#ffe3e3", "check": "#fff1c7", "ok": "#dcf5e3",
               "none": "#e3edff"}  # fmt: skip
LEVEL_WORDS = {"alarm": "limit crossed", "flag": "flagged", "check": "check the input",
               "ok": "ok", "none": "scored"}  # fmt: skip
_LIMIT_COLOURS = {"alarm below": "#d62728", "alarm above": "#d62728", "spec low": "#ff7f0e",
                  "spec high": "#ff7f0e"}  # fmt: skip
_PALETTE = ("#1f77b4", "#9467bd", "#2ca02c", "#8c564b")


def trend_figure(
    frames: Mapping[str, pd.DataFrame],
    column: str,
    title: str,
    *,
    limit: Limit | None = None,
    band: bool = True,
    unit: str = "",
    height: int = 300,
) -> go.Figure:
    """``column`` of each frame over ``time`` (one trace per frame: a bundle, or one), its
    interval (``low``/``high``) as a band, its ``actual`` values as markers, and ``limit``'s
    lines dashed with their names."""
    fig = go.Figure()
    label = f"{column} ({unit})" if unit else column
    for i, (name, frame) in enumerate(frames.items()):
        colour = _PALETTE[i % len(_PALETTE)]
        if frame.empty or column not in frame:
            continue
        if band and frame["low"].notna().any():
            fig.add_scatter(
                x=pd.concat([frame["time"], frame["time"][::-1]]),
                y=pd.concat([frame["high"], frame["low"][::-1]]),
                fill="toself", fillcolor="rgba(31,119,180,0.15)", line={"width": 0},
                hoverinfo="skip", name=f"{name}: interval" if name else "interval",
            )  # fmt: skip
        fig.add_scatter(
            x=frame["time"], y=frame[column], mode="lines+markers",
            marker={"size": 4}, line={"width": 1.5, "color": colour},
            name=f"{name}: {column}" if name else f"predicted {column}",
            customdata=frame[["lot"]].to_numpy(),
            hovertemplate="%{x|%Y-%m-%d %H:%M} UTC<br>lot %{customdata[0]}<br>"
            + f"{column} %{{y:.3g}} {unit}<extra></extra>",
        )  # fmt: skip
    first = next((f for f in frames.values() if not f.empty), None)
    if first is not None and first["actual"].notna().any():
        known = first[first["actual"].notna()]
        if column.startswith("p_"):  # a class probability: the inspected lots, bad at 1
            parts = [("actual: bad", known[known["actual"] == 1], "#d62728"),
                     ("actual: good", known[known["actual"] == 0], "#7f7f7f")]  # fmt: skip
        else:
            parts = [("actual", known, "black")]
        for name, rows, colour in parts:
            fig.add_scatter(
                x=rows["time"], y=rows["actual"], mode="markers", name=name, opacity=0.7,
                marker={"symbol": "x", "size": 5, "color": colour},
                customdata=rows[["lot"]].to_numpy(),
                hovertemplate="%{x|%Y-%m-%d %H:%M} UTC<br>lot %{customdata[0]}<br>"
                + f"{name} %{{y:.3g}}<extra></extra>",
            )  # fmt: skip
    for name, value in (limit.lines() if limit else {}).items():
        fig.add_hline(
            y=value, line_dash="dash", line_color=_LIMIT_COLOURS[name],
            annotation_text=f"{name} {value:g}", annotation_position="top left",
        )  # fmt: skip
    fig.update_layout(
        title=title, height=height, margin={"t": 40, "b": 30, "l": 50, "r": 10},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        yaxis_title=label,
    )  # fmt: skip
    return fig


def verdict_table(latest: pd.DataFrame, columns: Sequence[str], lot_name: str) -> Any:
    """The latest lots of a group as the page lists them: lot, when, values, and the
    verdict on its level's colour (a pandas Styler, which ``st.dataframe`` draws)."""
    out = pd.DataFrame(
        {
            lot_name: latest["lot"],
            "window end (UTC)": latest["time"].dt.strftime("%Y-%m-%d %H:%M"),
            **{c: latest[c].round(3) for c in columns if c in latest},
            "verdict": latest["verdict"],
        }
    ).reset_index(drop=True)
    shades = [f"background-color: {LEVEL_CELLS[lv]}" for lv in latest["level"]]
    return out.style.apply(lambda _: shades, subset=["verdict"]).format(precision=3)
