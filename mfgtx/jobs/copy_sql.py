"""Copying a file source into a SQL table: to try SQL inputs, or to stage an export.

The one job that writes a table it reads from later; the table carries mfgtx's mark
(:func:`~mfgtx.jobs._sql.copy_index`), and only a table with that mark is ever replaced.
"""

from __future__ import annotations

from mfgtx.jobfile.config import SourceSection
from mfgtx.jobfile.sources import read_chunks, without_position

__all__ = ["copy_to_sql"]


def copy_to_sql(source: SourceSection, url: str, table: str, *, replace: bool = False) -> int:
    """Copy a file source into a SQL table (to try SQL inputs, or to stage an export).

    Values are copied as read: text from CSV, typed values from Parquet. Returns the rows
    written. A table this function creates carries the index ``mfgtx_copy_<table>``, its
    mark; ``replace`` drops an existing table first, and only one with that mark: a table
    mfgtx did not create is refused (``ValueError``), and nothing is written. Otherwise rows
    are appended. The name is used as the database resolves it (``Sensors`` is ``sensors``).
    """
    import sqlalchemy as sa

    from mfgtx.jobfile._sql import check_table_name, resolve_table
    from mfgtx.jobs._sql import copy_index, copy_problem

    schema, name = resolve_table(check_table_name(table, "table"))
    engine = sa.create_engine(url)
    try:
        n = 0
        with engine.begin() as conn:
            exists = sa.inspect(conn).has_table(name, schema=schema)
            if exists and replace:
                problem = copy_problem(conn, schema, name)
                if problem is not None:
                    raise ValueError(f"table {table!r} {problem}; nothing was written")
            for i, chunk in enumerate(read_chunks(source)):
                mode = "replace" if replace and i == 0 else "append"
                without_position(chunk).to_sql(
                    name, conn, schema=schema, if_exists=mode, index=False
                )
                if i == 0 and (replace or not exists):
                    q = conn.dialect.identifier_preparer
                    where = q.quote_schema(schema) + "." if schema else ""
                    index, column = q.quote(copy_index(name)), q.quote(str(chunk.columns[0]))
                    if conn.dialect.name == "sqlite":  # SQLite puts the schema on the index
                        create = f"CREATE INDEX {where}{index} ON {q.quote(name)} ({column})"
                    else:
                        create = f"CREATE INDEX {index} ON {where}{q.quote(name)} ({column})"
                    conn.execute(sa.text(create))
                n += len(chunk)
        return n
    finally:
        engine.dispose()
