"""mfgtx.history: every ``mfgtx score`` run and its rows, kept to be compared with the truth.

A history is an SQLite file by default (``history.db`` beside the score output, or the job
file's ``history`` key: a file, a PostgreSQL URL, or ``off``), written with SQLAlchemy Core:

- :mod:`~mfgtx.history.tables`: the tables (runs, scores, truth, schema version);
- :mod:`~mfgtx.history.migrate`: numbered schema steps, an older history upgraded on open;
- :mod:`~mfgtx.history.records`: what an output row becomes (keys, predictions, interval,
  decision, flags);
- :mod:`~mfgtx.history.store`: opening a history and recording a run, all its rows or none;
- :mod:`~mfgtx.history.truth`: truth that arrives later, joined to its predictions;
- :mod:`~mfgtx.history.queries`: runs, and scores by time range;
- :mod:`~mfgtx.history.target`: where a job's history is;
- :mod:`~mfgtx.history.judged`: a bundle's scores whose truth has arrived (for the watch);
- :mod:`~mfgtx.history.watches`: the watch's verdicts (``mfgtx watch``).
- :mod:`~mfgtx.history.plant`: the plant view's trends and latest lots with their verdicts;
- :mod:`~mfgtx.history.promote`: the promoted bundle of each job, and the jobs of a history;
- :mod:`~mfgtx.history.compare`: two bundles on the same lots, and where they disagree;
- :mod:`~mfgtx.history.example`: a made-up history of hourly runs (tests, benchmarks).

Example:
    >>> import tempfile, pandas as pd, sqlalchemy as sa
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     engine = sa.create_engine(f"sqlite:///{tmp}/history.db")
    ...     store = open_history(engine, "history.db")
    ...     run = store.start_run(bundle_id="b1", kind="sensor")
    ...     rows = pd.DataFrame({"lot": ["L1"], "window_end": ["2026-01-01T00:00:00"],
    ...                          "p_bad": [0.9], "decision": ["bad"]})
    ...     store.finish_run(run, rows, ("lot", "window_end"))
    ...     _ = record_truth(store, pd.DataFrame({"lot": ["L1"], "label": ["bad"]}))
    ...     print(predictions_with_truth(store, "L1", "L1")[["lot", "decision", "truth"]])
    ...     engine.dispose()
    1
      lot decision truth
    0  L1      bad   bad
"""

from mfgtx.history.compare import disagreements, side_by_side
from mfgtx.history.example import example_history, example_job
from mfgtx.history.judged import judged_scores
from mfgtx.history.migrate import STEPS, HistoryError, migrate, schema_version
from mfgtx.history.plant import (
    ALL,
    LEVELS,
    NOT_RECORDED,
    last_scored,
    latest_lots,
    trend,
    trend_columns,
    verdict,
)
from mfgtx.history.promote import job_name, promote, promoted, scored_jobs
from mfgtx.history.queries import by_window_end, runs, scores_between
from mfgtx.history.store import HistoryStore, open_history, read_history
from mfgtx.history.target import history_url, history_where
from mfgtx.history.truth import (
    predictions_with_truth,
    predictions_with_truth_between,
    record_truth,
)
from mfgtx.history.watches import latest_watches, record_watch, watches_of

__all__ = [
    "ALL",
    "LEVELS",
    "NOT_RECORDED",
    "STEPS",
    "HistoryError",
    "HistoryStore",
    "by_window_end",
    "disagreements",
    "example_history",
    "example_job",
    "history_url",
    "history_where",
    "job_name",
    "judged_scores",
    "last_scored",
    "latest_lots",
    "latest_watches",
    "migrate",
    "open_history",
    "predictions_with_truth",
    "predictions_with_truth_between",
    "promote",
    "promoted",
    "read_history",
    "record_truth",
    "record_watch",
    "runs",
    "schema_version",
    "scored_jobs",
    "scores_between",
    "side_by_side",
    "trend",
    "trend_columns",
    "verdict",
    "watches_of",
]
