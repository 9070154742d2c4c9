"""Raising the alerts of one run: record its findings in the history, send what is new.

:func:`notify` is the one entry point for every source of findings: ``mfgtx score`` calls it
with flagged lots and limits crossed (:func:`~mfgtx.alerts.scores.score_findings`), the watch
with drift and validity. Each alert is sent once: the history (``history_alerts``,
:mod:`~mfgtx.alerts.ledger`) remembers what is open and what was delivered, and a delivery
that failed is tried again by the next run of the same source. Sending never raises: a
target that is down is logged, recorded as ``failed: <why>`` and named in the outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mfgtx.alerts.ledger import count_open, owed_by, record_delivery, unsent, update
from mfgtx.alerts.send import send
from mfgtx.history import HistoryStore
from mfgtx.history.findings import Finding, alert_on
from mfgtx.history.store import utc_now
from mfgtx.jobfile.alerts import AlertsSection

__all__ = ["AlertOutcome", "notify"]

log = logging.getLogger(__name__)

#: Alerts listed in one message; the rest are counted (all are recorded and marked sent).
MAX_LISTED = 50


@dataclass(frozen=True)
class AlertOutcome:
    """What one run did with its alerts.

    Args:
        opened: alerts opened by this run.
        cleared: open alerts this run no longer found.
        sent: alerts delivered by this run to every target that owed them (new ones, and
            earlier ones that had failed).
        failed: alerts this run could not deliver to some target (retried next run, to
            those targets only).
        open: alerts of this source open after the run.
        why: why the delivery failed (secrets masked), or ``None``.
    """

    opened: int = 0
    cleared: int = 0
    sent: int = 0
    failed: int = 0
    open: int = 0
    why: str | None = None

    @property
    def text(self) -> str:
        """One line for the run's summary."""
        out = (
            f"{self.opened} opened, {self.sent} sent, {self.failed} failed, "
            f"{self.cleared} cleared; {self.open} open"
        )
        return out if self.why is None else f"{out} (delivery failed: {self.why})"


def _message(rows: list[dict[str, object]]) -> str:
    lines = []
    for r in rows[:MAX_LISTED]:
        since = f" (open since {r['opened_at']})" if r["attempts"] else ""
        lines.append(f"- {r['subject']}: {r['message']}{since}")
    if len(rows) > MAX_LISTED:
        lines.append(f"... and {len(rows) - MAX_LISTED} more (mfgtx history JOB --alerts)")
    return "\n".join(lines)


def _resolved(
    section: AlertsSection,
    job: str,
    rows: list[dict[str, Any]],
    environ: Mapping[str, str] | None,
) -> None:
    """Tell every target which of its alerts cleared (``alerts.resolved``): once, not
    retried; a failure is logged."""
    if not rows:
        return
    title = f"{section.title} {job}: {len(rows)} resolved"
    body = "\n".join(f"- {r['subject']}: {r['reason']} cleared (open since {r['opened_at']})"
                     for r in rows[:MAX_LISTED])  # fmt: skip
    if len(rows) > MAX_LISTED:
        body += f"\n... and {len(rows) - MAX_LISTED} more"
    failed = send(section, dict.fromkeys(range(len(section.to)), (title, body)), environ=environ)
    if failed:
        log.warning("%d resolved alert(s) not told to every target (not retried): %s",
                    len(rows), "; ".join(failed[i] for i in sorted(failed)))  # fmt: skip


def notify(
    store: HistoryStore,
    section: AlertsSection,
    findings: Iterable[Finding],
    *,
    source: str,
    checked_subjects: Iterable[str],
    environ: Mapping[str, str] | None = None,
) -> AlertOutcome:
    """Record ``findings`` as alerts in ``store`` and send the new ones to ``section.to``.

    Args:
        store: the job's history.
        section: the job's ``alerts:``; a finding whose kind ``section.on`` leaves out
            raises no alert (and clears one it raised before). With ``section.resolved``,
            alerts that were sent and now clear are told as resolved (once, not retried).
        findings: what this run found (:class:`~mfgtx.alerts.findings.Finding`).
        source: what raised them, the same text every run (``score:<job>``,
            ``watch:<job>``): only its own alerts are cleared and retried.
        checked_subjects: every subject this run looked at; an open alert of ``source``
            on one of them that ``findings`` no longer hold is cleared.
        environ: where ``${VAR}`` in the targets is read (default: the environment).

    Raises:
        HistoryError: the history cannot be read or written (nothing was sent; or, when
            the delivery could not be recorded, what was sent is sent again next run).
    """
    wanted = [f for f in findings if alert_on(f.reason) in section.on]
    with store.transaction() as conn:
        opened, gone = update(conn, wanted, source=source, checked=checked_subjects,
                              now=utc_now())  # fmt: skip
        pending = unsent(conn, source)
        n_open = count_open(conn, source)
    job = source.partition(":")[2] or source
    cleared = len(gone)
    if section.resolved:
        _resolved(section, job, [r for r in gone if r["delivery"] == "sent"], environ)
    if not pending or not section.to:  # no target: recorded, pending until one is named
        return AlertOutcome(opened, cleared, 0, 0, n_open)
    owed = {
        i: [r for r in pending if owed_by(str(r["delivery"]), i)] for i in range(len(section.to))
    }
    owes = {i: {r["alert_id"] for r in rows} for i, rows in owed.items()}
    messages = {
        i: (f"{section.title} {job}: {len(rows)} {'alert' if len(rows) == 1 else 'alerts'}",
            _message(rows))
        for i, rows in owed.items() if rows
    }  # fmt: skip
    failed = send(section, messages, environ=environ)
    outcomes: dict[str | None, list[str]] = {}
    for r in pending:
        whys = [failed[i] for i in sorted(failed) if r["alert_id"] in owes[i]]
        outcomes.setdefault("; ".join(whys) or None, []).append(str(r["alert_id"]))
    with store.transaction() as conn:
        now = utc_now()
        for why, ids in outcomes.items():
            record_delivery(conn, ids, why, now)
    n_failed = sum(len(ids) for why, ids in outcomes.items() if why is not None)
    why = "; ".join(failed[i] for i in sorted(failed)) or None
    if why is None:
        log.info("%d alert(s) of %s sent", len(pending), source)
    else:
        log.warning("%d alert(s) of %s not sent to every target, retried next run: %s",
                    n_failed, source, why)  # fmt: skip
    return AlertOutcome(opened, cleared, len(pending) - n_failed, n_failed, n_open, why)
