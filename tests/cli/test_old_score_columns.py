"""An output written when scores were named by class index (``p_0``, ``p_1``, ``decision``
1/0) is refused by name, not merged with today's ``p_bad`` and ``decision`` words."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from mfgtx.jobfile.config import SinkSection
from mfgtx.jobs.sinks import write_scores

OLD = pd.DataFrame(
    {"lot": ["A", "B"], "window_end": ["1", "1"], "p_0": [0.9, 0.2], "p_1": [0.1, 0.8],
     "decision": [0, 1]}
)  # fmt: skip
NEW = pd.DataFrame(
    {"lot": ["A", "C"], "window_end": ["2", "1"], "p_bad": [0.3, 0.7],
     "decision": ["good", "bad"]}
)  # fmt: skip


def _sinks(tmp_path):
    yield "csv", SinkSection(path=str(tmp_path / "scores.csv")), "scores.csv"
    yield "sqlite", SinkSection(url=f"sqlite:///{tmp_path / 's.db'}", table="scores"), "scores"
    pg = os.environ.get("MFGTX_TEST_PG_URL")
    if pg:
        yield "postgresql", SinkSection(url=pg, table="old_score_columns"), "old_score_columns"


def _drop_pg_table(sink: SinkSection) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(str(sink.url))
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {sink.table}"))
    engine.dispose()


def test_an_output_with_old_column_names_is_refused_by_name(tmp_path) -> None:
    for what, sink, name in _sinks(tmp_path):
        if what == "postgresql":
            _drop_pg_table(sink)
        try:
            write_scores(sink, OLD)  # as an mfgtx of before wrote it
            with pytest.raises(ValueError) as e:
                write_scores(sink, NEW)
            text = str(e.value)
            assert name in text and "p_0, p_1" in text and "p_bad" in text, (what, text)
            assert "new file or table" in text and "nothing was written" in text, (what, text)
            # the old output is as it was
            if sink.path is not None:
                assert list(pd.read_csv(sink.path).columns) == list(OLD.columns)
        finally:
            if what == "postgresql":
                _drop_pg_table(sink)


def test_an_output_with_todays_names_merges(tmp_path) -> None:
    for what, sink, _ in _sinks(tmp_path):
        if what == "postgresql":
            continue  # the SQL sinks' merge is tested with the score job
        write_scores(sink, NEW)
        assert write_scores(sink, NEW.assign(window_end="3")) in (2, 4)


def test_a_table_an_earlier_run_created_gains_the_columns_a_newer_mfgtx_writes(tmp_path) -> None:
    """Scores now carry the lot's line beside ``lot``: a table mfgtx created before takes the
    new column (its earlier rows keep it empty) instead of failing every run."""
    import sqlalchemy as sa

    for what, sink, _ in _sinks(tmp_path):
        if what == "csv":
            continue
        if what == "postgresql":
            _drop_pg_table(sink)
        try:
            write_scores(sink, NEW)  # as an mfgtx of before wrote it: no line
            later = NEW.assign(lot=["D", "E"]).assign(line=["L1", "L2"], p_bad=[0.1, 0.9])
            write_scores(sink, later[["lot", "line", "window_end", "p_bad", "decision"]])
            engine = sa.create_engine(str(sink.url))
            got = pd.read_sql(f"SELECT lot, line, p_bad FROM {sink.table} ORDER BY lot", engine)
            engine.dispose()
            assert got["lot"].tolist() == ["A", "C", "D", "E"], what
            assert got["line"].isna().tolist() == [True, True, False, False], what
            assert got["line"].tolist()[2:] == ["L1", "L2"], what
        finally:
            if what == "postgresql":
                _drop_pg_table(sink)
