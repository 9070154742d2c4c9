"""Where a job's history is: the job file's ``history`` key, or beside the score output.

``history: off`` records nothing; a database URL is used as it is; a file name is a SQLite
file. Without the key, a scoring job records into ``history.db`` in its output's folder (a
SQLite output's folder; for a PostgreSQL output, its errors file's folder): the history sits
with the scores it describes, and a second output folder has its own history.
"""

from __future__ import annotations

from pathlib import Path

from mfgtx.jobfile.config import JobConfig

__all__ = ["DEFAULT_NAME", "history_url", "history_where"]

#: The history's file name beside the score output.
DEFAULT_NAME = "history.db"


def history_url(config: JobConfig) -> str | None:
    """The database URL of ``config``'s history (``None``: ``history: off``, or a job
    without a ``score`` section and no ``history`` key)."""
    value = config.history
    if value == "off":
        return None
    if value is not None:
        return value if "://" in value else f"sqlite:///{value}"
    sc = config.score
    if sc is None:
        return None
    if sc.output.path is not None:
        folder = Path(sc.output.path).parent
    elif str(sc.output.url).startswith("sqlite:///"):
        folder = Path(str(sc.output.url)[len("sqlite:///") :]).parent
    else:
        folder = sc.errors_path().parent
    return f"sqlite:///{folder / DEFAULT_NAME}"


def history_where(url: str) -> str:
    """A history in words, for messages: its SQLite file, or its URL without a password."""
    if url.startswith("sqlite:///"):
        return url[len("sqlite:///") :]
    from sqlalchemy.engine import make_url

    return str(make_url(url).render_as_string(hide_password=True))
