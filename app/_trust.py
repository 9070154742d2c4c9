"""How far to trust a prediction: the bundle's standing against its baselines, and the lot's set.

Everything here reads what the bundle already records (``manifest["metrics"]``, the split
audit's ``summary.sets``) and words it for a plant engineer. The standing itself is the
library's one rule (:func:`mfgtx.baselines.standing_of`), the same the report and the CLI
print; this module only picks its colour.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from mfgtx.baselines import EvaluationReport, standing_of

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


@dataclass(frozen=True)
class Trust:
    """The bundle's standing against its baselines, as every page shows it.

    Attributes:
        level: ``"use"``, ``"care"``, ``"do_not_rely"`` or ``"unknown"``, from
            :func:`mfgtx.baselines.standing_of` (the rule the report and the CLI use too).
        headline: the level in words and its reason, one line.
        details: the "how sure" sentences, recomputed from the stored comparison.
    """

    level: str
    headline: str
    details: tuple[str, ...]


#: How each level is drawn: the Streamlit box (its colour) and its icon.
BOXES: dict[str, tuple[Callable[..., Any], str]] = {
    "use": (st.success, ":material/verified:"),
    "care": (st.warning, ":material/help:"),
    "do_not_rely": (st.error, ":material/block:"),
    "unknown": (st.info, ":material/info:"),
}


def trust_of(manifest: dict[str, Any]) -> Trust:
    """The bundle's standing against its baselines, from the metrics its manifest stores
    (the verdict text stored beside them is not read: old bundles get today's rule)."""
    metrics = manifest.get("metrics") or {}
    found = standing_of(metrics)
    details: tuple[str, ...] = ()
    if found.level != "unknown" or metrics.get("rows"):
        try:
            how_sure = EvaluationReport.from_dict(metrics).how_sure
        except (KeyError, TypeError, ValueError):
            how_sure = ""
        details = (f"How sure: {how_sure}",) if how_sure else ()
    return Trust(found.level, found.headline, details)


def show_trust(
    manifest: dict[str, Any],
    *,
    details: bool = True,
    lead: str = "How far to trust this prediction.",
) -> Trust:
    """Draw the standing in its level's colour (green, amber, red; blue when unknown) after
    ``lead`` in bold and, with ``details``, the "how sure" sentences under it."""
    trust = trust_of(manifest)
    box, icon = BOXES[trust.level]
    box(f"**{lead}** {trust.headline}", icon=icon)
    for line in trust.details if details else ():
        st.caption(line)
    return trust


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
