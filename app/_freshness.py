"""How fresh the data folder is: each file's newest reading and the data's age from it.

A file copied or touched today is not fresh data: the age shown is the time since the
newest reading in the file (its time column: a bundle's time or label time, else
``timestamp`` or ``time``), never since the file's modification time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from mfgtx.data.io import csv_header, file_chunks

#: Time columns looked for in a data file besides the bundles' own.
TIME_NAMES = ("timestamp", "time")


@st.cache_data(max_entries=64, show_spinner="finding each file's newest reading")
def newest_reading(path: str, column: str, modified: float, size: int) -> pd.Timestamp | None:
    """The newest time in ``column`` of the CSV file ``path`` (read a chunk at a time), or
    ``None`` when it holds no date (cycle numbers, blanks). ``modified`` and ``size`` only key
    the cache, so a rewritten file is read again."""
    newest = None
    for chunk in file_chunks(Path(path)):
        text = chunk[column].dropna()
        if text.empty or pd.to_numeric(text, errors="coerce").notna().all():
            continue  # numbers (cycles) are no date
        t = pd.to_datetime(text, utc=True, errors="coerce", format="mixed").max()
        if pd.notna(t) and (newest is None or t > newest):
            newest = t
    return newest


def stat_key(stat: Any) -> tuple[float, int]:
    """What keys a file's cached newest reading: its modification time and size."""
    return stat.st_mtime, stat.st_size


def data_age(newest: pd.Timestamp | None, now: datetime) -> float | None:
    """Days from the newest reading to ``now`` (``None`` without a dated reading): the age
    of the data, whatever the file's modification time says."""
    return None if newest is None else round((now - newest).total_seconds() / 86400, 1)


def freshness(data_dir: Path, time_names: list[str]) -> None:
    st.subheader("Data")
    files = sorted(data_dir.glob("*.csv")) if data_dir.is_dir() else []
    if not files:
        st.warning(f"No CSV files in the data directory {data_dir}.")
        return
    now = datetime.now(UTC)
    rows = []
    for f in files:
        stat = f.stat()
        header = set(csv_header(f))
        column = next((c for c in (*time_names, *TIME_NAMES) if c in header), None)
        newest = None if column is None else newest_reading(str(f), column, *stat_key(stat))
        rows.append(
            {
                "file": f.name,
                "size (kB)": round(stat.st_size / 1024, 1),
                "newest reading (UTC)": "no dated reading"
                if newest is None
                else newest.strftime("%Y-%m-%d %H:%M"),
                "data age (days)": data_age(newest, now),
                "file modified (UTC)": datetime.fromtimestamp(stat.st_mtime, UTC).strftime(
                    "%Y-%m-%d %H:%M"
                ),
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption(
        "Data age: days since the newest reading in the file (its time column), not since "
        "the file was last written."
    )
    sensors = data_dir / "sensors.csv"
    if sensors.is_file() and {"line", "timestamp"} <= set(csv_header(sensors)):  # the sample plant
        df = pd.concat(c[["line", "timestamp"]] for c in file_chunks(sensors))
        latest = df.groupby("line")["timestamp"].max().rename("latest reading (UTC)")
        st.dataframe(latest.reset_index(), hide_index=True)
