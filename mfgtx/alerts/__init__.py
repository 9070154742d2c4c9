"""mfgtx.alerts: alerts declared in the job file (``alerts:``), delivered once per subject and
reason through Apprise, recorded in the history with their delivery.

- :class:`Finding` (subject, reason key, message), shared with the watch
  (:mod:`mfgtx.history.findings`), and the reason keys (``flagged``, ``limit:<col>``,
  ``drift:<sensor>``, ``dead:<sensor>``, ``not_valid``...);
- :mod:`~mfgtx.alerts.scores`: the findings of a ``mfgtx score`` run;
- :mod:`~mfgtx.alerts.ledger`: the alerts in ``history_alerts``: open, seen, cleared, sent;
- :mod:`~mfgtx.alerts.send`: one message to every target through Apprise, secrets masked;
- :mod:`~mfgtx.alerts.notify`: :func:`notify`, what every source of findings calls.

Example:
    >>> import tempfile, sqlalchemy as sa
    >>> from mfgtx.history import open_history
    >>> from mfgtx.jobfile.alerts import AlertsSection
    >>> section = AlertsSection(to=("json://127.0.0.1:9/closed",))  # nobody listens there
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     engine = sa.create_engine(f"sqlite:///{tmp}/history.db")
    ...     store = open_history(engine, "history.db")
    ...     found = [Finding("machine M07", "limit:rul_cycles", "rul_cycles 22 is below 30")]
    ...     first = notify(store, section, found, source="score:rul",
    ...                    checked_subjects=["machine M07"])
    ...     again = notify(store, section, [], source="score:rul",
    ...                    checked_subjects=["machine M07"])
    ...     engine.dispose()
    >>> (first.opened, first.failed, first.open), (again.cleared, again.open)
    ((1, 1, 1), (1, 0))
"""

from mfgtx.alerts.ledger import alerts
from mfgtx.alerts.notify import AlertOutcome, notify
from mfgtx.alerts.scores import score_findings, subject_of
from mfgtx.history.findings import REASONS, Finding, alert_on

__all__ = [
    "REASONS",
    "AlertOutcome",
    "Finding",
    "alert_on",
    "alerts",
    "notify",
    "score_findings",
    "subject_of",
]
