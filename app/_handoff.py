"""Opening a lot's page from another page (the plant view's drill-down): which bundle and
lot the lot page starts with, handed over once through the session state.

:func:`open_lot` leaves the bundle's folder name, the lot and its line for the page of the
bundle's kind (Quality & RUL for sensor models, Forecast for forecasters) and switches to
it; that page calls :func:`take` before its selectors, once: a later visit starts from what
its user picked.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

#: The lot page of each model kind: its script (relative to the dashboard) and its name.
LOT_PAGES = {
    "sensor": ("views/quality.py", "quality"),
    "forecast": ("views/forecast.py", "forecast"),
}
_KEY = "__open_lot"


def open_lot(kind: str, bundle: str, lot: str, line: str | None = None) -> None:
    """Switch to the lot page of ``kind`` with ``bundle`` (its folder name) and ``lot`` (and
    ``line``) picked. Raises ``KeyError`` for a kind without a lot page."""
    script, page = LOT_PAGES[kind]
    st.session_state[_KEY] = {"page": page, "bundle": bundle, "lot": lot, "line": line}
    st.switch_page(script)


def take(page: str) -> dict[str, Any] | None:
    """What :func:`open_lot` handed to ``page`` (``bundle``, ``lot``, ``line``), once."""
    handed = st.session_state.get(_KEY)
    if not handed or handed.get("page") != page:
        return None
    del st.session_state[_KEY]
    return dict(handed)
