"""mfgtx.split: leakage-safe splits of sensor windows by lot and time, and their audit.

:class:`LotTimeSplit` splits (scikit-learn splitter protocol), :func:`audit` proves a split —
ours or one made by hand — free of the usual leaks and returns an :class:`AuditReport` to save
next to the model; checks it could not make are listed as not checked, never as passed.
"""

from mfgtx.split._times import duration_text
from mfgtx.split.audit import audit
from mfgtx.split.plan import SplitPlan
from mfgtx.split.report import AuditReport, Check, LeakageError, NotChecked
from mfgtx.split.splitter import LotTimeSplit, PurgeWarning, SplitSets

__all__ = [
    "AuditReport",
    "Check",
    "LeakageError",
    "LotTimeSplit",
    "NotChecked",
    "PurgeWarning",
    "SplitPlan",
    "SplitSets",
    "audit",
    "duration_text",
]
