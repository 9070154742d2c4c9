"""SQL sources are read-only whatever the job file says; table names cannot inject SQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from mfgtx.jobfile._sql import read_engine
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobfile.sources import read_frame
from mfgtx.jobs import ConfigError, load_config


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "plant.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sensors (lot TEXT, timestamp TEXT, temperature_c REAL)")
        conn.executemany(
            "INSERT INTO sensors VALUES (?, ?, ?)",
            [("L1", f"2026-03-02T06:0{i}:00+00:00", 180.0 + i) for i in range(5)],
        )
    return path


def _tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("DROP TABLE sensors", "must be one SELECT statement, found DROP"),
        ("VACUUM INTO 'copy.db'", "found VACUUM"),
        ("ATTACH 'evil.db' AS evil", "found ATTACH"),
        ("SELECT * FROM sensors; DROP TABLE sensors", "holds several"),
        ("WITH gone AS (DELETE FROM sensors RETURNING *) SELECT * FROM gone", "DELETE"),
        ("SELECT * INTO backup FROM sensors", "INTO"),
    ],
)
def test_a_query_that_writes_is_refused_before_it_runs(db, query, message) -> None:
    url = f"sqlite:///{db}"
    with pytest.raises(ConfigError, match=message):
        load_config(None, [f"data.source={{url: '{url}', query: \"{query}\"}}"])
    assert _tables(db) == ["sensors"] and not (db.parent / "copy.db").exists()


def test_a_plain_select_with_comments_and_literals_is_read(db) -> None:
    q = "SELECT * FROM sensors WHERE lot = 'L1;x' OR lot = 'L1' -- every reading; of L1"
    frame = read_frame(SourceSection(url=f"sqlite:///{db}", query=q))
    assert len(frame) == 5


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE sensors",
        "DELETE FROM sensors",
        "INSERT INTO sensors VALUES ('x', 'y', 1)",
        "VACUUM INTO '{dir}/copy.db'",
        "ATTACH '{dir}/evil.db' AS evil",
        "CREATE TABLE t (a)",
        "PRAGMA journal_mode = DELETE",
    ],
)
def test_the_source_engine_cannot_write_even_past_the_query_check(db, statement) -> None:
    engine = read_engine(f"sqlite:///{db}")
    with engine.connect() as conn, pytest.raises(sa.exc.DatabaseError):
        conn.execute(sa.text(statement.format(dir=db.parent)))
        conn.commit()
    engine.dispose()
    assert _tables(db) == ["sensors"]
    assert sorted(p.name for p in db.parent.iterdir()) == ["plant.db"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sensors").fetchone()[0] == 5


def test_a_table_name_that_is_not_a_name_is_refused(db) -> None:
    url = f"sqlite:///{db}"
    with pytest.raises(ConfigError, match="is not a table name"):
        load_config(None, [f"data.source={{url: '{url}', table: 'x; DROP TABLE sensors; --'}}"])
    with pytest.raises(ConfigError, match="is not a table name"):
        load_config(
            None,
            [f"score.output={{url: '{url}', table: 'x; DROP TABLE sensors; --'}}"],
        )


def test_schema_qualified_tables_and_safe_error_file_names(db) -> None:
    from mfgtx.jobfile._sql import safe_slug

    config = load_config(None, [f"score.output={{url: 'sqlite:///{db}', table: main.scores}}"])
    assert config.score.errors_path().name == "plant.main.scores.errors.csv"
    assert safe_slug("x; DROP TABLE sensors; --") == "x_DROP_TABLE_sensors"
    frame = read_frame(SourceSection(url=f"sqlite:///{db}", table="main.sensors"))
    assert len(frame) == 5


def test_other_databases_are_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="mysql databases are not supported"):
        load_config(None, ["data.source={url: 'mysql://u@h/db', table: sensors}"])
    with pytest.raises(ConfigError, match="SQLite needs a database file"):
        load_config(None, ["data.source={url: 'sqlite://', table: sensors}"])


def test_reading_a_missing_database_does_not_create_it(tmp_path) -> None:
    from mfgtx.data import DataError

    missing = tmp_path / "typo.db"
    with pytest.raises(DataError, match="cannot read"):
        read_frame(SourceSection(url=f"sqlite:///{missing}", table="sensors"))
    assert not missing.exists()
