"""The labels of a bundle's data: its labelled windows, read by its recorded job exactly as
training read them, and one lot's known result in words.

The recorded job and its data are read through :mod:`mfgtx.jobfile` (a job file and the data
it names, read; never written), so the app runs no job of :mod:`mfgtx.jobs` (the
import-linter contract "app does not import mfgtx.jobs" has no exception).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
from _bundles import _load, load
from _common import library_warnings, when
from _recorded import recorded

from mfgtx.artifacts import FoundBundle
from mfgtx.data import DataError


@st.cache_resource(show_spinner="reading the bundle's labelled data", max_entries=4, ttl=300)
def labelled_windows(
    bundle_id: str, path: str, every_row: bool = False
) -> tuple[Any, str, tuple[str, ...]]:
    """The bundle's labelled windows, read by its recorded job exactly as training read
    them (labels joined, ``defect`` and label times derived as the job file says), the
    name of their source, and what the library warned about while reading them. With
    ``every_row`` one window ends at every reading (stride 1), so that a label is found at
    whatever reading a prediction is made as of.

    Raises:
        DataError: the bundle records no job (saved from Python), or its data is gone.
    """
    from mfgtx.jobfile import read_windows, recorded_job

    predictor = _load(bundle_id, path)
    job = recorded_job(predictor.bundle.manifest)
    if job is None or job.data is None:
        raise DataError(
            f"{Path(path).name} records no training job (it was saved from Python): the labels "
            "of its data are unknown here; judge it with `mfgtx evaluate JOB.yaml`"
        )
    if every_row:
        job = replace(job, windows=replace(job.windows, stride=1))
    with library_warnings() as notes:
        windows, _ = read_windows(job, predictor.kind)
    source = job.data.source.path or job.data.source.table or "query"
    return windows, str(source), tuple(notes)


def known_label(info: FoundBundle, lot: str, end: Any = None) -> str:
    """The lot's known label in words, from the bundle's labelled data: its inspection
    result, or its RUL at the very reading ``end`` (the end of the window the prediction is
    made from; never a label of another reading). Says so when it is not known."""
    predictor = load(info)
    regression = predictor.task != "classification"
    try:
        windows, _, _ = labelled_windows(info.bundle_id, str(info.path), every_row=regression)
    except DataError as e:
        return f"Known result: not available here ({e})."
    mine = np.flatnonzero(windows.lot.astype(str) == str(lot))
    if not len(mine) or windows.y is None:
        return f"Known result: lot {lot} has no label in the bundle's data."
    target = predictor.input_spec.targets[0]
    if not regression:
        y = windows.y[mine[-1], 0]
        if np.isnan(y):
            return f"Known result: lot {lot} is not inspected yet."
        word = "bad (a defect was found)" if y >= 0.5 else "good (passed inspection)"
        return f"Known result: lot {lot} was inspected {word}."
    at = mine[-1] if end is None else None
    if end is not None:  # the labelled window ending at this very reading
        same = mine[windows.end[mine] == np.asarray(end, dtype=windows.end.dtype)]
        at = same[-1] if len(same) else None
    shown = when(windows.end[mine[-1]] if end is None else end, predictor.columns.time)
    if at is None or np.isnan(windows.y[at, 0]):
        return (
            f"Known {target} at {shown}: none; lot {lot} has no label at that reading in the "
            "bundle's data."
        )
    unit = recorded(info.manifest).unit(target)
    return f"Known {target} at {shown}: {float(windows.y[at, 0]):.1f} {unit}".rstrip() + "."
