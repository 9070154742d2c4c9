"""One watch of a bundle: its recent inputs and its judged scores against what it recorded.

:func:`watch` takes what the job glue read (the bundle's manifest, the recent raw rows, the
scores with truth from the history) and gives the :class:`~mfgtx.watch.report.WatchReport`.
It reads nothing itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from mfgtx.data import Regimes
from mfgtx.history.judged import JUDGED_COLUMNS
from mfgtx.jobfile.watch import WatchSettings
from mfgtx.watch.drift import check_inputs
from mfgtx.watch.profile import profile_of
from mfgtx.watch.regimes import regime_names, regime_of_rows
from mfgtx.watch.report import WatchReport
from mfgtx.watch.validity import ModelCheck, check_model, reported_figures

__all__ = ["interval_nominal", "watch"]


def interval_nominal(manifest: Mapping[str, Any]) -> float | None:
    """The share of true values a bundle's interval was built to hold (its highest minus
    its lowest quantile), or ``None`` without an interval."""
    figures = reported_figures(manifest)
    if "interval_nominal" in figures:
        return figures["interval_nominal"]
    config = (manifest.get("model") or {}).get("config") or {}
    qs = config.get("quantiles") or (config.get("member") or {}).get("quantiles") or ()
    return round(max(qs) - min(qs), 6) if len(qs) >= 2 else None


def watch(
    manifest: Mapping[str, Any],
    bundle_id: str,
    *,
    subject: str,
    recent: pd.DataFrame | None,
    judged: pd.DataFrame | None,
    settings: WatchSettings,
    regimes: Regimes | None = None,
    lots: int = 0,
    window: tuple[str | None, str | None] = (None, None),
    lot_column: str | None = None,
) -> WatchReport:
    """Watch one bundle.

    Args:
        manifest: the bundle's manifest (its profile, test figures, task and targets).
        bundle_id: the bundle's id.
        subject: the bundle's name in findings.
        recent: the recent raw rows (sensor columns by name), or ``None``.
        judged: the bundle's scores with truth (:func:`mfgtx.history.judged_scores`), or
            ``None`` (no history).
        settings: the thresholds.
        regimes: the bundle's operating regimes, to compare sensors within each.
        lots, window: how many recent lots, from when to when (for the report).
        lot_column: the column of ``recent`` that names each row's lot: recent lots are
            then judged against groups of as many training lots (``None`` or a column
            ``recent`` lacks: reading by reading).

    Returns:
        the :class:`~mfgtx.watch.report.WatchReport`.

    Raises:
        ValueError: the bundle holds a training profile this mfgtx cannot read.

    Example:
        >>> import numpy as np
        >>> from mfgtx.watch.profile import PROFILE_KEY, TrainingProfile
        >>> rng = np.random.default_rng(0)
        >>> trained = TrainingProfile.from_values(rng.normal(200, 5, (2000, 1)), ("temp",))
        >>> manifest = {"extra": {PROFILE_KEY: trained.to_dict()}}
        >>> hot = pd.DataFrame({"temp": rng.normal(210, 5, 300)})
        >>> report = watch(manifest, "0" * 64, subject="line 3", recent=hot, judged=None,
        ...                settings=WatchSettings())
        >>> report.verdict, [f.reason for f in report.findings()]
        ('not_valid', ['drift:temp', 'range:temp', 'not_valid'])
    """
    profile = profile_of(manifest)
    inputs: tuple = ()
    judged_inputs = False
    if profile is None:
        if manifest.get("kind") == "vit":
            note = "an image model: its inputs are not watched"
        else:
            note = (
                "the bundle predates training distributions (written by an earlier mfgtx); "
                "retrain it to watch its inputs"
            )
    elif recent is None or recent.empty:
        note = "no recent data to compare with the training data"
    else:
        regime = names = None
        if regimes is not None and profile.regimes:
            regime, names = regime_of_rows(regimes, recent), regime_names(regimes)
        lot = None
        if lot_column is not None and lot_column in recent.columns:
            lot = recent[lot_column].astype("string").to_numpy(dtype=object)
        inputs = check_inputs(
            profile, recent, settings, regime=regime, regime_names=names or (), lot=lot
        )
        judged_inputs = True
        per = " within each operating regime" if regime is not None else ""
        note = (
            f"{len(profile.sensors)} sensor(s) of {len(recent)} recent rows compared with the "
            f"training data{per}"
        )
    spec = manifest.get("input_spec") or {}
    task = spec.get("task") or (manifest.get("metrics") or {}).get("task")
    if judged is None:
        model = ModelCheck(0, None, None, None, None, "no history to judge it on")
    else:
        model = check_model(
            judged if len(judged) else pd.DataFrame(columns=JUDGED_COLUMNS),
            reported_figures(manifest),
            settings,
            task=task,
            targets=tuple(spec.get("targets") or ()),
            nominal=interval_nominal(manifest),
        )
    return WatchReport(
        subject=subject,
        bundle_id=bundle_id,
        inputs=inputs,
        inputs_note=note,
        inputs_judged=judged_inputs,
        model=model,
        lots=lots,
        window_start=window[0],
        window_end=window[1],
    )
