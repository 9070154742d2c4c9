"""How far to trust a prediction: the bundle's verdict against its baselines, and the lot's set.

Everything here reads what the bundle already records (``manifest["metrics"]``, the split
audit's ``summary.sets``) and words it for a plant engineer; no figure is computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

#: Words for each set of the bundle's split, as shown beside a prediction.
SET_WORDS = {
    "train": (
        "a training lot: the model learned from it, so its prediction here looks better "
        "than on new lots"
    ),
    "val": "a validation lot: used to choose the training epoch and the calibration",
    "test": "a test lot: held out from training; the bundle's metrics were measured on such lots",
    "purged": (
        "set aside at a split boundary (purged): neither trained on nor tested on, "
        "but from the same period as the training data"
    ),
    "unused": "in the bundle's data but left out of every set",
    "unseen": "not in the bundle's data: new to the model",
}

#: Arrow after a metric name: which way is better.
ARROWS = {True: "↑ higher is better", False: "↓ lower is better"}


@dataclass(frozen=True)
class Trust:
    """The bundle's standing against its baselines.

    Attributes:
        level: ``"better"`` (beats the best baseline beyond noise), ``"tie"`` (the test lots
            cannot tell them apart), ``"worse"`` (a baseline beats it beyond noise) or
            ``"unknown"`` (no comparison stored).
        headline: one line for the top of a prediction.
        details: the report's verdict and "how sure" sentences.
    """

    level: str
    headline: str
    details: tuple[str, ...]


def trust_of(manifest: dict[str, Any]) -> Trust:
    """The bundle's verdict against its baselines, from the metrics its manifest stores."""
    metrics = manifest.get("metrics") or {}
    rows = metrics.get("rows") or []
    details = tuple(s for s in (metrics.get("verdict"), metrics.get("how_sure")) if s)
    if not rows:
        return Trust(
            "unknown",
            "This bundle stores no comparison with baselines: how far to trust it is unknown.",
            details,
        )
    primary = metrics.get("primary")
    model = rows[0]["name"]
    differences = [d for d in metrics.get("differences") or [] if d.get("metric") == primary]
    higher = (metrics.get("higher_is_better") or {}).get(primary)
    if not differences or higher is None:
        return Trust("unknown", f"{model}: no confidence interval against the baselines.", details)
    d = differences[0]
    low, high, baseline = float(d["low"]), float(d["high"]), d["baseline"]
    n, unit = d.get("n_groups"), d.get("unit", "test lots")
    if low <= 0 <= high:
        return Trust(
            "tie",
            f"Use with care: on the {n} {unit} {model} cannot be told apart from the "
            f"baseline {baseline} on {primary} ({ARROWS[higher]}).",
            details,
        )
    better = (low > 0) == bool(higher)
    if better:
        return Trust(
            "better",
            f"{model} beats the best baseline, {baseline}, on {primary} beyond resampling "
            f"noise ({n} {unit}).",
            details,
        )
    return Trust(
        "worse",
        f"Do not rely on this model: the baseline {baseline} beats it on {primary} beyond "
        f"resampling noise ({n} {unit}); prefer {baseline} or retrain.",
        details,
    )


def set_of(manifest: dict[str, Any], lot: str | None) -> str:
    """``train``, ``val``, ``test``, ``purged``, ``unused``, ``unseen`` or ``unknown`` (the
    bundle records no split) for ``lot`` (``None``: data not from the bundle's plant)."""
    audit = manifest.get("audit") or {}
    sets = (audit.get("summary") or {}).get("sets")
    if not sets:
        return "unknown"
    if lot is None:
        return "unseen"
    for name in ("train", "val", "test", "purged", "unused"):
        if str(lot) in {str(x) for x in (sets.get(name) or {}).get("lots") or []}:
            return name
    return "unseen"


def set_sentence(manifest: dict[str, Any], lot: str | None, what: str = "Lot") -> str:
    """E.g. "Lot L1-0003 is a test lot: held out from training; ..."."""
    which = set_of(manifest, lot)
    if which == "unknown":
        return f"{what} {lot}: the bundle records no split, so whether it trained on it is unknown."
    if lot is None:
        return f"This {what.lower()} is {SET_WORDS['unseen']}."
    members = len((manifest.get("audit") or {}).get("folds") or [])
    extra = (
        f" (the ensemble's {members} members were cross-fitted by lot: some of them trained on it)"
        if members and which != "unseen"
        else ""
    )
    return f"{what} {lot} is {SET_WORDS[which]}{extra}."


def show_trust(manifest: dict[str, Any]) -> Trust:
    """Draw the trust line (coloured by level) and the report's sentences under it."""
    trust = trust_of(manifest)
    # a losing model is a warning, not an error: errors on these pages mean bad input
    box, icon = {
        "better": (st.success, ":material/verified:"),
        "tie": (st.warning, ":material/help:"),
        "worse": (st.warning, ":material/block:"),
    }.get(trust.level, (st.info, ":material/info:"))
    box(f"**How far to trust this prediction.** {trust.headline}", icon=icon)
    for line in trust.details:
        st.caption(line)
    return trust
