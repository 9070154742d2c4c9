"""The history's tables, as the newest schema version has them.

Every name starts with ``history_``: a history may live in a PostgreSQL database beside
the plant's own tables (``scores`` is a likely plant table name). Times are ISO 8601 text in
UTC (``2026-12-04T18:06:02Z``), which sorts as time does in both databases; ``window_end``
is the output's own text (an ISO time or a cycle number). ``keys``, ``predictions`` and
``flags`` are JSON text.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["ALERTS", "METADATA", "PROMOTED", "RUNS", "SCORES", "TRUTH", "VERSION", "WATCH"]

METADATA = sa.MetaData()

#: One row: the schema version of the file (:mod:`mfgtx.history.migrate`).
VERSION = sa.Table("history_schema", METADATA, sa.Column("version", sa.Integer, nullable=False))

#: One row per ``mfgtx score`` run; ``status`` is ``running`` until the run's rows commit.
RUNS = sa.Table(
    "history_runs",
    METADATA,
    sa.Column("run_id", sa.String(32), primary_key=True),
    sa.Column("job_file", sa.Text),
    sa.Column("bundle_id", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("started_at", sa.String(32), nullable=False),
    sa.Column("finished_at", sa.String(32)),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("rows", sa.Integer),
    sa.Column("bad_lots", sa.Integer),
    sa.Column("seconds", sa.Float),
    sa.Column("message", sa.Text),
    sa.Column("host", sa.Text),  # v3: where the run's process ran, to find abandoned runs
    sa.Column("pid", sa.Integer),
)

#: One row per scored key of a bundle: scoring the same key again keeps the latest values.
SCORES = sa.Table(
    "history_scores",
    METADATA,
    sa.Column("run_id", sa.String(32), nullable=False),
    sa.Column("bundle_id", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("scored_at", sa.String(32), nullable=False),
    sa.Column("lot", sa.Text),
    sa.Column("window_end", sa.Text),
    sa.Column("key", sa.Text, nullable=False),  # JSON list of the output's key values
    sa.Column("keys", sa.Text, nullable=False),  # JSON object: key column -> value
    sa.Column("predictions", sa.Text, nullable=False),
    sa.Column("interval_low", sa.Float),
    sa.Column("interval_high", sa.Float),
    sa.Column("decision", sa.Text),
    sa.Column("flags", sa.Text, nullable=False),
    sa.UniqueConstraint("bundle_id", "key", name="ux_history_scores_key"),
)
sa.Index("ix_history_scores_lot", SCORES.c.lot, SCORES.c.window_end)
sa.Index("ix_history_scores_scored_at", SCORES.c.scored_at)

#: Outcomes known later (a labels table, ``mfgtx evaluate``), joined to scores by lot and,
#: where given, window end; a later value for the same lot, window end and target replaces.
TRUTH = sa.Table(
    "history_truth",
    METADATA,
    sa.Column("lot", sa.Text, nullable=False),
    sa.Column("window_end", sa.Text, nullable=False),  # "" for the lot as a whole
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("value", sa.Text),
    sa.Column("source", sa.Text),
    sa.Column("arrived_at", sa.String(32), nullable=False),
    sa.UniqueConstraint("lot", "window_end", "target", name="ux_history_truth_key"),
)

#: The bundle promoted for each job (the job's ``name``, else its file's name): the plant
#: view shows its scores, the watch judges it. Promoting another bundle replaces the row.
PROMOTED = sa.Table(
    "history_promoted",
    METADATA,
    sa.Column("job", sa.Text, primary_key=True),
    sa.Column("bundle_id", sa.Text, nullable=False),
    sa.Column("bundle_path", sa.Text),
    sa.Column("promoted_at", sa.String(32), nullable=False),
    sa.Column("note", sa.Text),
)

#: One row per ``mfgtx watch`` of a bundle: its verdict (``valid``, ``not_valid``,
#: ``unknown``), the reason in plant words, and its findings (JSON: per sensor and per model
#: figure, each with its threshold and whether it is beyond it).
WATCH = sa.Table(
    "history_watch",
    METADATA,
    sa.Column("watch_id", sa.String(32), primary_key=True),
    sa.Column("bundle_id", sa.Text, nullable=False),
    sa.Column("checked_at", sa.String(32), nullable=False),
    sa.Column("window_start", sa.String(32)),
    sa.Column("window_end", sa.String(32)),
    sa.Column("verdict", sa.String(16), nullable=False),
    sa.Column("summary", sa.Text),
    sa.Column("findings", sa.Text, nullable=False),
)
sa.Index("ix_history_watch_bundle", WATCH.c.bundle_id, WATCH.c.checked_at)

#: Alerts: at most one ``open`` row per (subject, reason), sent once; it is ``cleared`` when a
#: later run no longer finds the reason, and a new row opens if it comes back. ``delivery`` is
#: ``sent``, ``pending`` or ``failed: <why>`` (a failed delivery is retried on the next run).
ALERTS = sa.Table(
    "history_alerts",
    METADATA,
    sa.Column("alert_id", sa.String(32), primary_key=True),
    sa.Column(
        "source", sa.Text, nullable=False
    ),  # what raised it: "score:<bundle>", "watch:<bundle>"
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("opened_at", sa.String(32), nullable=False),
    sa.Column("last_seen_at", sa.String(32), nullable=False),
    sa.Column("cleared_at", sa.String(32)),
    sa.Column("delivery", sa.Text, nullable=False),
    sa.Column("delivered_at", sa.String(32)),
    sa.Column("attempts", sa.Integer, nullable=False),
)
sa.Index("ix_history_alerts_open", ALERTS.c.subject, ALERTS.c.reason, ALERTS.c.state)
