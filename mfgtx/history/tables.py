"""The history's tables, as the newest schema version has them.

Every name starts with ``history_``: a history may live in a PostgreSQL database beside
the plant's own tables (``scores`` is a likely plant table name). Times are ISO 8601 text in
UTC (``2026-12-04T18:06:02Z``), which sorts as time does in both databases; ``window_end``
is the output's own text (an ISO time or a cycle number). ``keys``, ``predictions`` and
``flags`` are JSON text.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["METADATA", "RUNS", "SCORES", "TRUTH", "VERSION"]

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
