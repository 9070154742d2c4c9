"""What an audit found: :class:`Check`, :class:`AuditReport` and :class:`LeakageError`.

An :class:`AuditReport` is saved next to every model as JSON (:meth:`AuditReport.to_json`),
so that anyone can see which lots and times the model was trained, validated and tested on,
and that the split passed every check of :func:`mfgtx.split.audit`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["AuditReport", "Check", "LeakageError"]


@dataclass(frozen=True)
class Check:
    """One audit check.

    Attributes:
        name: e.g. ``"lot_disjoint"``.
        passed: whether the split passed it.
        detail: one or two sentences a plant engineer can act on.
        examples: up to five offenders (window position, lot, times, and what they clash with).
    """

    name: str
    passed: bool
    detail: str
    examples: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {
            "name": self.name,
            "passed": self.passed,
            "detail": self.detail,
            "examples": [dict(e) for e in self.examples],
        }


@dataclass(frozen=True)
class AuditReport:
    """Result of :func:`audit`, saved next to the model.

    Attributes:
        checks: every check that ran, in the order of the module docstring.
        summary: per set the number of windows and lots, the lot ids, first start and last
            end (ISO 8601); the gap; the number of purged windows (``None`` for a hand-made
            split). JSON-compatible.
    """

    checks: tuple[Check, ...]
    summary: dict[str, Any]

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[str, ...]:
        """Names of the failed checks."""
        return tuple(c.name for c in self.checks if not c.passed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (``json.dumps`` works on it)."""
        return {
            "passed": self.passed,
            "checks": [c.to_dict() for c in self.checks],
            "summary": json.loads(json.dumps(self.summary)),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)


class LeakageError(ValueError):
    """A split failed its audit; ``.report`` holds the full :class:`AuditReport`."""

    def __init__(self, report: AuditReport) -> None:
        self.report = report
        failed = [c for c in report.checks if not c.passed]
        lines = [f"- {c.name}: {c.detail}" for c in failed]
        super().__init__(
            f"the split leaks: {len(failed)} of {len(report.checks)} audit checks failed\n"
            + "\n".join(lines)
        )

    def __reduce__(self) -> tuple[type[LeakageError], tuple[AuditReport]]:
        return type(self), (self.report,)  # picklable, e.g. across joblib workers
