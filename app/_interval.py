"""A regression prediction and its interval as shown: within the range its target can take.

A quantile head knows nothing of a target's range, so a remaining useful life can come out
as "-3.3 to 38.2 cycles". What is shown stays within the range the bundle records for the
target (``input_spec.clip``, the training targets' range, when the job clipped), else a
remaining-life target (its name holds ``rul``, as the library's RUL scoring reads it) at 0,
and the page says what was clipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Shown:
    """A prediction as shown: ``point`` and ``low``/``high`` (``nan`` without an interval)
    within ``floor`` .. ``ceiling``, and ``note``: what was clipped and why ("" if nothing)."""

    point: float
    low: float
    high: float
    note: str = ""


def target_range(spec: Any, target: str) -> tuple[float, float, str]:
    """``(floor, ceiling, why)`` of ``target``: the bundle's recorded range, else ``[0, inf)``
    for a remaining-life target, else unbounded."""
    clip = getattr(spec, "clip", None)
    targets = tuple(getattr(spec, "targets", ()) or ())
    if clip is not None and target in targets:
        low, high = clip[targets.index(target)]
        return float(low), float(high), "the range of its training values the bundle records"
    if "rul" in target.lower():
        return 0.0, math.inf, "a remaining life cannot be negative"
    return -math.inf, math.inf, ""


def shown(
    spec: Any, target: str, point: float, low: float = math.nan, high: float = math.nan
) -> Shown:
    """``point`` and its interval clipped to :func:`target_range`, with a note naming each
    value that was clipped (as the model gave it)."""
    floor, ceiling, why = target_range(spec, target)
    moved = []
    out = []
    for name, v in (
        ("point prediction", point),
        ("interval's low end", low),
        ("interval's high end", high),
    ):
        c = v if math.isnan(v) else min(max(v, floor), ceiling)
        if c != v and not math.isnan(v):
            moved.append(f"the {name} ({v:.1f})")
        out.append(c)
    note = ""
    if moved:
        bound = f"within {floor:g} to {ceiling:g}" if math.isfinite(ceiling) else f"at {floor:g}"
        gave = moved[0] if len(moved) == 1 else f"{', '.join(moved[:-1])} and {moved[-1]}"
        note = f"Shown clipped {bound} ({why}): the model gave {gave}."
    return Shown(out[0], out[1], out[2], note)
