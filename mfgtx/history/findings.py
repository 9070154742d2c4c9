"""A finding: what one check found wrong with one subject, the unit an alert is raised for.

A finding names its ``subject`` in plant words (``line L3, lot L3-017``; ``machine M07``;
``sensor vibration_mm_s``; ``model sample_rul``), its ``reason`` as a stable key, and a
``message`` for a person. The reason key says what kind of finding it is, and so which
``alerts.on`` entry lets it raise an alert (:data:`REASONS`):

=================  ==============  ===================================================
reason             ``alerts.on``   raised by
=================  ==============  ===================================================
``flagged``        flagged_lot     ``mfgtx score``: the lot's latest window decided bad
``limit:<col>``    limit           ``mfgtx score``: a prediction beyond ``limits.<col>``
``drift:<sensor>`` drift           the watch: the input no longer looks like training
``dead:<sensor>``  drift           the watch: a sensor with no reading
``constant:<s>``   drift           the watch: a sensor stuck at one value
``missing:<s>``    drift           the watch: far more readings missing than in training
``range:<s>``      drift           the watch: readings outside the training range
``error``          not_valid       the watch: realized error beyond the bundle's own
``coverage``       not_valid       the watch: the interval holds far less than it says
``not_valid``      not_valid       the watch: the model no longer holds
=================  ==============  ===================================================

The watch (:mod:`mfgtx.watch`) and alerts (:mod:`mfgtx.alerts`) share this one class: the
watch finds, alerts raise.

One alert is open per (subject, reason) at a time (:func:`mfgtx.alerts.notify`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REASONS", "Finding", "alert_on"]

#: A reason key's kind (the text before ``:``) and the ``alerts.on`` entry that covers it.
REASONS: dict[str, str] = {
    "flagged": "flagged_lot",
    "limit": "limit",
    "drift": "drift",
    "dead": "drift",
    "constant": "drift",
    "missing": "drift",
    "range": "drift",
    "error": "not_valid",
    "coverage": "not_valid",
    "not_valid": "not_valid",
}
#: The reason kinds that name a column (``limit:rul_cycles``, ``drift:temperature_c``).
NAMED = ("limit", "drift", "dead", "constant", "missing", "range")


def alert_on(reason: str) -> str:
    """The ``alerts.on`` entry that covers ``reason``.

    Example:
        >>> alert_on("limit:rul_cycles"), alert_on("dead:vibration_mm_s")
        ('limit', 'drift')
    """
    return REASONS[reason.split(":", 1)[0]]


@dataclass(frozen=True)
class Finding:
    """One thing wrong with one subject.

    Args:
        subject: what it is about, in plant words (``line L3, lot L3-017``).
        reason: a stable key (:data:`REASONS`): ``flagged``, ``limit:<column>``,
            ``drift:<sensor>``, ``dead:<sensor>`` or ``not_valid``.
        message: what is wrong, for a person (``rul_cycles 22 is below the alarm limit
            30``).

    Example:
        >>> Finding("machine M07", "limit:rul_cycles", "rul_cycles 22 is below 30").reason
        'limit:rul_cycles'
    """

    subject: str
    reason: str
    message: str

    def __post_init__(self) -> None:
        kind, _, detail = self.reason.partition(":")
        if kind not in REASONS:
            raise ValueError(
                f"reason {self.reason!r}: expected one of {sorted(REASONS)} (with ':<column>' "
                f"for {', '.join(NAMED)})"
            )
        if (kind in NAMED) != bool(detail):
            raise ValueError(f"reason {self.reason!r}: only {', '.join(NAMED)} name a column")
        if not self.subject.strip() or not self.message.strip():
            raise ValueError("a finding needs a subject and a message")
