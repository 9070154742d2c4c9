"""What one watch of a bundle found: :class:`WatchReport` and its :class:`Finding` rows.

A report holds the check of every input sensor (:mod:`mfgtx.watch.drift`), the model's check
on the truth that arrived (:mod:`mfgtx.watch.validity`) and the verdict: ``not_valid`` when
anything is beyond its threshold, ``valid`` when nothing is and at least one part could be
judged, ``unknown`` when neither could. :meth:`WatchReport.findings` lists what is wrong as
``(subject, reason, message)`` with stable reasons (``drift:<sensor>``, ``dead:<sensor>``,
``missing:<sensor>``, ``range:<sensor>``, ``constant:<sensor>``, ``error``, ``coverage``,
``not_valid``), which alerts can be raised on once per (subject, reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mfgtx.history.findings import Finding
from mfgtx.watch.drift import SensorCheck
from mfgtx.watch.validity import ModelCheck

__all__ = ["Finding", "WatchReport"]

#: What the verdict can be.
VALID, NOT_VALID, UNKNOWN = "valid", "not_valid", "unknown"


@dataclass(frozen=True)
class WatchReport:
    """One watch of one bundle.

    Attributes:
        subject: the bundle's name (the job's ``name``, else the bundle folder's).
        bundle_id: the bundle's id.
        inputs: each sensor's check (with regimes: every row, then per regime).
        inputs_note: how the inputs were judged, or why they were not, in plant words.
        inputs_judged: whether the inputs were compared with a training profile.
        model: the model's check on the truth that arrived.
        lots: recent lots read; window_start, window_end: their first and last time.
    """

    subject: str
    bundle_id: str
    inputs: tuple[SensorCheck, ...]
    inputs_note: str
    inputs_judged: bool
    model: ModelCheck
    lots: int = 0
    window_start: str | None = None
    window_end: str | None = None

    def _problems(self) -> list[Finding]:
        merged: dict[str, list[str]] = {}
        for check in self.inputs:
            for reason, message in check.problems:
                merged.setdefault(f"{reason}:{check.sensor}", []).append(message)
        out = [Finding(self.subject, r, "; ".join(m)) for r, m in merged.items()]
        out += [Finding(self.subject, r, m) for r, m in self.model.problems]
        return out

    @property
    def verdict(self) -> str:
        """``valid``, ``not_valid`` or ``unknown`` (see the module docstring)."""
        if self._problems():
            return NOT_VALID
        if self.inputs_judged or self.model.valid is not None:
            return VALID
        return UNKNOWN

    @property
    def why(self) -> str:
        """The verdict's reason in plant words."""
        problems = self._problems()
        if problems:
            shown = "; ".join(p.message for p in problems[:4])
            more = f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""
            return f"not valid: {shown}{more}"
        head = "still valid" if self.verdict == VALID else "unknown"
        return f"{head}: inputs: {self.inputs_note}; model: {self.model.why}"

    def findings(self) -> tuple[Finding, ...]:
        """What is wrong, one :class:`Finding` per (subject, reason), ending with
        ``not_valid`` (the verdict's reason) when anything is; empty when nothing is."""
        problems = self._problems()
        if problems:
            problems.append(Finding(self.subject, NOT_VALID, self.why))
        return tuple(problems)

    def to_record(self) -> dict[str, Any]:
        """What the history keeps of it (:func:`mfgtx.history.record_watch`): the verdict,
        its reason, and as findings every finding, every sensor and the model's figures."""
        rows: list[dict[str, Any]] = [
            {"subject": f.subject, "reason": f.reason, "message": f.message}
            for f in self.findings()
        ]
        rows += [
            {
                "subject": self.subject,
                "reason": "sensor",
                "sensor": c.sensor,
                "regime": c.regime,
                "rows": c.rows,
                "missing": c.missing,
                "outside": c.outside,
                "distance": c.distance,
                "drift_limit": c.drift_limit,
                "range_limit": c.range_limit,
                "lots": c.lots,
                "group": c.group,
                "problems": [r for r, _ in c.problems],
            }
            for c in self.inputs
        ]
        m = self.model
        rows.append(
            {
                "subject": self.subject,
                "reason": "model",
                "judged": m.judged,
                "figure": m.figure,
                "realized": m.realized,
                "test": m.test,
                "accuracy": m.accuracy,
                "coverage": m.coverage,
                "nominal": m.nominal,
                "valid": m.valid,
                "message": m.why,
            }
        )
        return {
            "bundle_id": self.bundle_id,
            "verdict": self.verdict,
            "summary": self.why,
            "findings": rows,
            "window_start": self.window_start,
            "window_end": self.window_end,
        }

    def lines(self) -> list[str]:
        """The report for a person: one line per sensor, the model, the verdict."""
        out = [
            f"{self.subject} (bundle {self.bundle_id[:12]}), {self.lots} recent lot(s)"
            + (f" from {self.window_start} to {self.window_end}" if self.window_start else "")
        ]
        out.append(f"inputs: {self.inputs_note}")
        for c in self.inputs:
            figures = f"missing {c.missing:.0%}"
            if c.outside is not None:
                figures += f", outside training range {c.outside:.0%}"
            if c.distance is not None:
                figures += f", distance {c.distance:.2f} spreads"
            if c.drift_limit is not None:
                figures += f" (limit {c.drift_limit:.2f}"
                figures += f" for {c.lots} lot(s))" if c.lots is not None else ")"
            if c.group is not None:
                figures += f", worst on {c.group}"
            state = ", ".join(r for r, _ in c.problems) or "ok"
            out.append(f"  {c.where}: {state} ({c.readings} readings; {figures})")
        out.append(f"model: {self.model.why}")
        out.append(f"verdict: {self.why}")  # the why opens with the verdict in words
        return out
