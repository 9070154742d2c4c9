"""Small helpers every page uses: the page guard (errors and the library's warnings in
words), times for people, a data fingerprint and a CSV download button.

Pages stay thin: settings are in :mod:`_settings`, bundles in :mod:`_bundles`, tables in
:mod:`_tables`, images in :mod:`_images`, the labels of a bundle's data in :mod:`_labels`;
every rule about data lives in the library (``mfgtx``).
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from mfgtx.artifacts import BundleError
from mfgtx.data import DataError

log = logging.getLogger("mfgtx.app")


def _from_mfgtx(w: warnings.WarningMessage) -> bool:
    return type(w.message).__module__.startswith("mfgtx.")


@contextmanager
def library_warnings() -> Iterator[list[str]]:
    """Collect the warnings the library raises inside (``DataWarning``, ``PurgeWarning``,
    ``BundleWarning``...): their messages, each once, in the list yielded. Others pass."""
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield notes
    for w in caught:
        if _from_mfgtx(w):
            text = str(w.message)
            if text not in notes:
                notes.append(text)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def show_warnings(notes: Iterable[str]) -> None:
    """Each of the library's warnings as a warning on the page."""
    for text in dict.fromkeys(notes):
        st.warning(text)


def guarded(body: Callable[[], None]) -> Callable[[], None]:
    """Run a page body: the library's warnings are shown on the page; any exception is
    logged here and shown as a one-line message."""

    def page() -> None:
        try:
            with library_warnings() as notes:
                body()
            show_warnings(notes)
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


def when(value: Any, time_name: str = "cycle") -> str:
    """A time for people: ``2026-03-02 10:38 UTC`` for timestamps, ``cycle 45`` for numbers."""
    if isinstance(value, str):
        try:
            value = pd.Timestamp(value)
        except ValueError:
            return value
    if isinstance(value, (np.datetime64, pd.Timestamp)) or hasattr(value, "tzinfo"):
        t = pd.Timestamp(value)
        t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
        return t.strftime("%Y-%m-%d %H:%M UTC")
    v = float(value)
    return f"{time_name} {v:g}"


def data_key(df: pd.DataFrame) -> str:
    """A short fingerprint of a frame, to key cached results of the data it holds."""
    digest = hashlib.sha256(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def csv_download(frame: pd.DataFrame, label: str, file_name: str, key: str) -> None:
    """A download button for ``frame`` as CSV (UTF-8, no index)."""
    st.download_button(
        label,
        frame.to_csv(index=False).encode("utf-8"),
        file_name=file_name,
        mime="text/csv",
        key=key,
        on_click="ignore",
    )
