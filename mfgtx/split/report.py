"""What an audit found: :class:`Check`, :class:`NotChecked`, :class:`AuditReport`, and
:class:`LeakageError`.

An :class:`AuditReport` is saved next to every model as JSON (:meth:`AuditReport.to_json`),
so that anyone can see which lots and times the model was trained, validated and tested on,
which checks of :func:`mfgtx.split.audit` the split passed, and which could not be made
(no label times, no scaler): those are listed as not checked, never counted as passed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["AuditReport", "Check", "LeakageError", "NotChecked"]


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

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Check:
        """Rebuild from :meth:`to_dict`."""
        return cls(
            name=str(state["name"]),
            passed=bool(state["passed"]),
            detail=str(state.get("detail", "")),
            examples=tuple(dict(e) for e in state.get("examples", ())),
        )


@dataclass(frozen=True)
class NotChecked:
    """A check the audit could not make, and why (never counted as passed).

    Attributes:
        name: e.g. ``"label_availability"``.
        reason: what was missing and what to give so that it can be checked.
    """

    name: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class AuditReport:
    """Result of :func:`audit`, saved next to the model.

    Attributes:
        checks: every check that ran, in the order of the module docstring.
        summary: per set the number of windows and lots, the lot ids, first start and last
            end (ISO 8601); the gap; the number of purged windows (``None`` for a hand-made
            split). With folds: the number of folds and the gap. JSON-compatible.
        not_checked: the checks that could not be made, each with its reason.
        folds: for a cross-validation (several folds), each fold's own report; ``checks``
            then holds each check over all folds (passed only if it passed in every fold).

    Example:
        >>> report = AuditReport((Check("lot_disjoint", True, "each lot in one set"),), {},
        ...                      not_checked=(NotChecked("label_availability", "no times"),))
        >>> report.passed, report.failed, report.unchecked
        (True, (), ('label_availability',))
    """

    checks: tuple[Check, ...]
    summary: dict[str, Any]
    not_checked: tuple[NotChecked, ...] = ()
    folds: tuple[AuditReport, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether every check that was made passed (see :attr:`unchecked` for the rest)."""
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[str, ...]:
        """Names of the failed checks."""
        return tuple(c.name for c in self.checks if not c.passed)

    @property
    def unchecked(self) -> tuple[str, ...]:
        """Names of the checks that could not be made."""
        return tuple(c.name for c in self.not_checked)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (``json.dumps`` works on it)."""
        return {
            "passed": self.passed,
            "checks": [c.to_dict() for c in self.checks],
            "not_checked": [c.to_dict() for c in self.not_checked],
            "summary": json.loads(json.dumps(self.summary)),
            "folds": [f.to_dict() for f in self.folds],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> AuditReport:
        """Rebuild from :meth:`to_dict` (``passed`` is recomputed from the checks)."""
        return cls(
            checks=tuple(Check.from_dict(c) for c in state.get("checks", ())),
            summary=dict(state.get("summary") or {}),
            not_checked=tuple(
                NotChecked(str(c["name"]), str(c["reason"])) for c in state.get("not_checked", ())
            ),
            folds=tuple(cls.from_dict(f) for f in state.get("folds", ())),
        )


class LeakageError(ValueError):
    """A split failed its audit; ``.report`` holds the full :class:`AuditReport`."""

    def __init__(self, report: AuditReport) -> None:
        self.report = report
        failed = [c for c in report.checks if not c.passed]
        lines = [f"- {c.name}: {c.detail}" for c in failed]
        lines += [f"- {c.name}: not checked, {c.reason}" for c in report.not_checked]
        super().__init__(
            f"the split leaks: {len(failed)} of {len(report.checks)} audit checks failed\n"
            + "\n".join(lines)
        )

    def __reduce__(self) -> tuple[type[LeakageError], tuple[AuditReport]]:
        return type(self), (self.report,)  # picklable, e.g. across joblib workers
