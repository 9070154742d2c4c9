"""``mfgtx score --engine ray`` writes what the one-process score writes, byte for byte: the
output, the errors file and the history's rows, on the sample plant's quality and RUL jobs
read from folders of files cut mid-lot (so lots carry over between files and partitions)."""

from __future__ import annotations

import logging
import os
import sqlite3
import uuid
from pathlib import Path

import pandas as pd
import pytest

from mfgtx.engine import EngineSpec
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobs import load_config, score, train
from mfgtx.jobs.copy_sql import copy_to_sql

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
RAY = EngineSpec("ray", workers=2)

#: the sample jobs: (job file, their source, rows per file of the folder, chunk_rows)
JOBS = {
    "quality": ("sample_quality.yaml", "sensors.csv", 1700, 700),
    "rul": ("sample_rul.yaml", "degradation.csv", 700, 300),
}


def _folder(src: Path, out: Path, rows: int, bad: str | None = None) -> Path:
    """``src`` cut every ``rows`` rows (mid-lot) into files read in name order; ``bad``: a
    lot whose first sensor reading is made unreadable."""
    frame = pd.read_csv(src, dtype=str, keep_default_na=False)
    if bad is not None:
        lot = "lot" if "lot" in frame.columns else "machine"
        frame.loc[frame.index[frame[lot] == bad][3], frame.columns[3]] = "n/a?"
    out.mkdir(parents=True)
    for k, at in enumerate(range(0, len(frame), rows)):
        frame.iloc[at : at + rows].to_csv(out / f"part-{k:02d}.csv", index=False)
    return out


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory, ray_installed) -> dict[str, list[str]]:
    """Each sample job trained for one epoch: its overrides (job file first); without Ray,
    skipped before training."""
    out = tmp_path_factory.mktemp("ray_score")
    jobs = {}
    for name, (job, data, rows, chunk) in JOBS.items():
        folder = _folder(SAMPLE / data, out / name / "source", rows)
        keys = [
            f"data.source.path={folder}",
            f"data.source.chunk_rows={chunk}",
            f"bundle={out / name / 'bundle'}",
            "train.epochs=1",
            "train.progress=log",
        ]
        if name == "quality":
            keys.append(f"data.labels.source.path={SAMPLE / 'quality.csv'}")
        path = str(ROOT / "pipelines" / "configs" / job)
        train("sensor", load_config(path, keys))
        jobs[name] = [path, *keys]
    return jobs


def _score_both(
    job: list[str], out: Path, caplog: pytest.LogCaptureFixture, *, on_ray: bool = True
) -> list[Path]:
    """Score ``job`` in one process and on Ray into ``out``/{local,ray}: their folders;
    ``on_ray``: the Ray score scores in partitions (else it must fall back to one process)."""
    where = []
    for engine in ("local", "ray"):
        folder = out / engine
        keys = [f"score.output.path={folder / 'scores.csv'}", "alerts=null"]
        if engine == "ray":  # the job file's engine section, as `import mfgtx` users give it
            keys += [f"engine.name={RAY.name}", f"engine.workers={RAY.workers}"]
        with caplog.at_level(logging.INFO, logger="mfgtx.jobs._ray_score"):
            score(load_config(job[0], job[1:] + keys))
        where.append(folder)
    fell_back = "scoring in this process instead" in caplog.text
    assert fell_back != on_ray, "the Ray score fell back to one process" if on_ray else caplog.text
    assert ("scored by worker" in caplog.text) == on_ray
    return where


def _history(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with sqlite3.connect(folder / "history.db") as db:
        runs = pd.read_sql("SELECT * FROM history_runs", db)
        rows = pd.read_sql("SELECT * FROM history_scores", db)
    when = ["run_id", "started_at", "finished_at", "seconds", "pid", "scored_at"]
    return runs.drop(columns=when, errors="ignore"), rows.drop(columns=when, errors="ignore")


def _same_files(local: Path, ray: Path) -> None:
    for name in ("scores.csv", "scores.errors.csv"):
        assert (ray / name).read_bytes() == (local / name).read_bytes(), name
    for mine, theirs in zip(_history(ray), _history(local), strict=True):
        pd.testing.assert_frame_equal(mine, theirs)


@pytest.mark.parametrize("name", [*sorted(JOBS), "quality from one file"])
def test_ray_score_writes_the_one_process_output_byte_for_byte(
    name, bundles, ray_local, tmp_path, caplog, capfd
) -> None:
    job = bundles[name.split()[0]]
    if name.endswith("one file"):  # the sample plant's export as shipped: every 2nd frame each
        job = [*job, f"data.source.path={SAMPLE / 'sensors.csv'}", "data.source.chunk_rows=2000"]
    import ray.data

    context = ray.data.DataContext.get_current()
    settings = (context.enable_progress_bars, logging.getLogger("ray.data").level)
    capfd.readouterr()
    local, ray = _score_both(job, tmp_path, caplog)
    assert len(pd.read_csv(local / "scores.csv")) > 0
    _same_files(local, ray)
    # Ray Data's own progress and execution lines stay off a scheduler's log, and its
    # settings are left as they were
    printed = capfd.readouterr().err
    for words in ("Starting execution", "Running Dataset", "Progress", "execution finished"):
        assert words not in printed, printed[-2000:]
    assert (context.enable_progress_bars, logging.getLogger("ray.data").level) == settings


def test_a_bad_lot_is_listed_the_same_and_the_rest_is_scored(
    bundles, ray_local, tmp_path, caplog
) -> None:
    job = bundles["quality"]
    folder = _folder(SAMPLE / "sensors.csv", tmp_path / "bad", 1700, bad="L2-0003")
    job = [*job, f"data.source.path={folder}"]
    local, ray = _score_both(job, tmp_path, caplog)
    errors = pd.read_csv(ray / "scores.errors.csv")
    assert errors["lot"].tolist() == ["L2-0003"] and "n/a?" in errors["reason"].iloc[0]
    assert "L2-0004" in set(pd.read_csv(ray / "scores.csv")["lot"])
    _same_files(local, ray)


def test_a_lot_over_three_files_is_scored_in_process_the_same(
    bundles, ray_local, tmp_path, caplog
) -> None:
    """A partition reads one file before its own for the lot it carries over; a lot that
    began further back cannot be carried so: the job scores in process, with a warning."""
    job = bundles["rul"]
    folder = _folder(SAMPLE / "degradation.csv", tmp_path / "thin", 120)
    local, ray = _score_both([*job, f"data.source.path={folder}"], tmp_path, caplog, on_ray=False)
    assert "may begin before the file before it" in caplog.text
    _same_files(local, ray)


def _postgres() -> str:
    """The test PostgreSQL's URL (``MFGTX_TEST_PG_URL``, set by .ci/run, as for the
    ``pg_schema`` fixture); skips without it."""
    url = os.environ.get("MFGTX_TEST_PG_URL")
    if not url:
        pytest.skip("MFGTX_TEST_PG_URL is not set")
    return url


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_sql_table_is_scored_in_ranges_of_its_rows_the_same(
    database, bundles, ray_local, tmp_path, caplog
) -> None:
    """Each partition reads its own rows of the table (no worker reads it all), and the
    output is the one-process output, byte for byte."""
    url = f"sqlite:///{tmp_path / 'plant.db'}" if database == "sqlite" else _postgres()
    table = f"sensors_{uuid.uuid4().hex[:8]}"
    copy_to_sql(SourceSection(path=str(SAMPLE / "sensors.csv")), url, table, replace=True)
    try:
        source = f"data.source={{url: '{url}', table: {table}, chunk_rows: 700}}"
        local, ray = _score_both([*bundles["quality"], source], tmp_path, caplog)
        assert "rows 0 to" in caplog.text and "of the table) scored by worker" in caplog.text
        assert "(frames 0, 2, ... of the whole source)" not in caplog.text
        _same_files(local, ray)
    finally:
        if database == "postgresql":
            import sqlalchemy as sa

            engine = sa.create_engine(url)
            with engine.begin() as conn:
                conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
            engine.dispose()
