"""One rule for what mfgtx may replace or delete: only what it wrote itself, recognisable as
such (a record of the bytes it wrote, its own mark, a bundle's manifest, a token in a
temporary's name, the index of a table it created). Everything else is refused before any
work starts, with the path as the user wrote it, and stays as it was."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from pathlib import Path

import pandas as pd
import pytest

from mfgtx._files import (
    FOLDER_MARKER,
    RECORDS,
    NotWrittenByMfgtx,
    atomic_write,
    atomic_write_bytes,
    claim_folder,
    expand_path,
    remove_leftovers,
    remove_written,
    replace_problem,
    temporary_path,
)
from mfgtx.cli import main
from mfgtx.jobs import ConfigError, load_config
from mfgtx.jobs.sinks import write_text
from mfgtx.jobs.train import check_train_outputs
from tests.cli.conftest import quality_job, summary, write_job

NOT_OURS = "exists and was not written by mfgtx (or was changed since it wrote it)"
USERS_CSV = "lot,window_end,p_defect,operator_note\nL1-0001,2026-01-01,0.2,resampled by QA\n"


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _score(capsys, job: Path, *overrides: str) -> tuple[int, str]:
    args = ["score", str(job)]
    for o in overrides:
        args += ["--set", o]
    code, _, err = _run(capsys, *args)
    return code, err


# --------------------------------------------------------------------------- files


def test_a_file_mfgtx_did_not_write_is_never_replaced(tmp_path, umask_022) -> None:
    users = tmp_path / "scores.csv"
    users.write_text(USERS_CSV)
    users.chmod(0o600)
    with pytest.raises(NotWrittenByMfgtx, match=re.escape(f"{users} {NOT_OURS}")):
        atomic_write_bytes(users, b"lot\n")
    assert users.read_text() == USERS_CSV and _mode(users) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv"]  # no temporary left


def test_a_file_changed_after_mfgtx_wrote_it_is_no_longer_its(tmp_path) -> None:
    out = tmp_path / "scores.csv"
    for text in (b"lot,p\nL1,0.2\n", b"lot,p\nL1,0.3\n", b"lot,p\nL1,0.3\n"):
        atomic_write_bytes(out, text)  # its own file, rewritten run after run
        assert replace_problem(out) is None
    with out.open("a") as f:  # a note added by hand
        f.write("L2,0.9\n")
    assert replace_problem(out) == NOT_OURS
    with pytest.raises(NotWrittenByMfgtx):
        atomic_write_bytes(out, b"lot,p\n")
    assert out.read_bytes().endswith(b"L2,0.9\n")


def test_links_and_folders_are_not_files_mfgtx_wrote(tmp_path) -> None:
    target = tmp_path / "real.csv"
    atomic_write_bytes(target, b"x\n")
    (tmp_path / "link.csv").symlink_to(target)
    (tmp_path / "folder.csv").mkdir()
    assert "is a link" in str(replace_problem(tmp_path / "link.csv"))
    assert "is a folder" in str(replace_problem(tmp_path / "folder.csv"))


def test_new_files_get_the_usual_mode_and_replaced_ones_keep_theirs(tmp_path, umask_022):
    out = tmp_path / "report.json"
    atomic_write_bytes(out, b"{}")
    assert _mode(out) == 0o644  # not the 0600 of a temporary file
    out.chmod(0o640)
    atomic_write_bytes(out, b'{"a": 1}')
    assert _mode(out) == 0o640 and out.read_bytes() == b'{"a": 1}'


def test_a_write_killed_around_its_rename_leaves_a_file_still_recognised(
    tmp_path, monkeypatch
) -> None:
    import mfgtx._files as files

    out = tmp_path / "scores.csv"
    atomic_write_bytes(out, b"old\n")
    real_replace = os.replace

    def die_at_the_rename(src, dst):
        if Path(dst) == out:
            raise KeyboardInterrupt  # the scheduler's signal, between record and rename
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", die_at_the_rename)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(out, b"new\n")
    monkeypatch.undo()
    assert out.read_bytes() == b"old\n" and replace_problem(out) is None
    record = json.loads((tmp_path / RECORDS / "scores.csv.json").read_text())
    assert len(record["contents"]) == 2  # the old and the new contents, while renaming
    real_record = files._write_record
    calls = []

    def die_after_the_rename(path, contents):
        calls.append(contents)
        if len(calls) == 2:  # the record's final rewrite, after the file was renamed
            raise KeyboardInterrupt
        real_record(path, contents)

    monkeypatch.setattr(files, "_write_record", die_after_the_rename)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(out, b"newer\n")
    monkeypatch.undo()
    assert out.read_bytes() == b"newer\n" and replace_problem(out) is None


def test_temporaries_carry_a_token_and_only_those_are_cleaned_up(tmp_path) -> None:
    out = tmp_path / "scores.csv"
    seen = []
    atomic_write(out, lambda tmp: (seen.append(Path(tmp).name), Path(tmp).write_text("x")))
    assert seen[0].startswith(".scores.csv.mfgtx-") and seen[0].endswith(".tmp")
    ours_file = temporary_path(out)
    ours_file.write_text("left by a killed write")
    ours_dir = temporary_path(out, ".old")
    ours_dir.mkdir()
    (ours_dir / "weights.safetensors").write_text("w")
    users = {
        ".scores.csv.old": "yesterday's scores, kept by hand",
        ".scores.csv.x.tmp": "an editor's temporary",
        ".scores.csv.mfgtx-abc.tmp": "not mfgtx's token",
        ".scores.csv.mfgtx-0123456789ab.tmp.bak": "a copy",
    }
    for name, text in users.items():
        (tmp_path / name).write_text(text)
    (tmp_path / ".scores.csv.old.d").mkdir()
    folder = tmp_path / ".scores.csv.mfgtx.old"  # a folder of the user's, named like ours
    folder.mkdir()
    (folder / "notes.txt").write_text("keep")
    removed = remove_leftovers(out)
    assert sorted(removed) == sorted([ours_file, ours_dir])
    assert not ours_file.exists() and not ours_dir.exists()
    for name, text in users.items():
        assert (tmp_path / name).read_text() == text
    assert (folder / "notes.txt").read_text() == "keep"


def test_remove_written_deletes_only_what_mfgtx_wrote(tmp_path) -> None:
    from mfgtx.train import save_checkpoint

    users = tmp_path / "my_runs"  # a folder of the user's, named as the checkpoint folder
    users.mkdir()
    (users / "notes.txt").write_text("mine")
    (users / "old").mkdir()
    (users / "old" / "last.ckpt").write_bytes(b"another tool's checkpoint")
    save_checkpoint(users / "last.ckpt", {"epoch": 1})
    save_checkpoint(users / "member-0" / "last.ckpt", {"epoch": 1})
    atomic_write_bytes(users / "history.csv", b"epoch\n1\n")
    atomic_write_bytes(users / "edited.csv", b"epoch\n1\n")
    (users / "edited.csv").write_text("epoch\n1\nmy note\n")
    temporary_path(users / "last.ckpt").write_bytes(b"left by a killed write")
    kept = remove_written(users)
    assert sorted(p.relative_to(users).as_posix() for p in kept) == [
        "edited.csv", "notes.txt", "old/last.ckpt",
    ]  # fmt: skip
    left = sorted(p.relative_to(users).as_posix() for p in users.rglob("*"))
    assert left == [f"{RECORDS}", f"{RECORDS}/edited.csv.json", "edited.csv", "notes.txt",
                    "old", "old/last.ckpt"]  # fmt: skip
    empty_users_folder = tmp_path / "empty"
    empty_users_folder.mkdir()
    save_checkpoint(empty_users_folder / "last.ckpt", {"epoch": 1})
    assert remove_written(empty_users_folder) == [] and empty_users_folder.is_dir()
    ours = claim_folder(tmp_path / "runs" / "model.ckpt")
    assert (ours / FOLDER_MARKER).is_file()
    save_checkpoint(ours / "member-1" / "last.ckpt", {"epoch": 1})
    assert remove_written(ours) == [] and not ours.exists() and (tmp_path / "runs").is_dir()


def test_paths_are_expanded_once(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PLANT_OUT", "/srv/$NOT_A_VARIABLE")
    monkeypatch.delenv("MFGTX_UNSET_VARIABLE", raising=False)
    assert expand_path("~/r/s.csv") == f"{tmp_path}/home/r/s.csv"
    assert expand_path("$HOME/r/s.csv") == f"{tmp_path}/home/r/s.csv"
    assert expand_path("${PLANT_OUT}/s.csv") == "/srv/$NOT_A_VARIABLE/s.csv"  # not twice
    with pytest.raises(ValueError, match=r"\$MFGTX_UNSET_VARIABLE in .* is not set"):
        expand_path("$MFGTX_UNSET_VARIABLE/s.csv")


# --------------------------------------------------------------------------- job files


def test_load_config_expands_every_path_and_keeps_it_as_written(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PLANT", str(tmp_path / "plant"))
    monkeypatch.delenv("MFGTX_UNSET_VARIABLE", raising=False)
    config = load_config(
        None,
        [
            "data={source: {path: $PLANT/sensors.csv}, columns: {lot: lot, time: t}}",
            "score.output.path=~/results/scores.csv",
            "score.errors=${PLANT}/errors.csv",
            "train.checkpoint_dir=~/ckpt",
            "bundle=~/models/q",
            "evaluate.source.url=sqlite:///~/plant.db",
            "evaluate.source.table=sensors",
        ],
    )
    home = tmp_path / "home"
    assert config.data.source.path == f"{tmp_path}/plant/sensors.csv"
    assert config.score.output.path == f"{home}/results/scores.csv"
    assert config.score.errors == f"{tmp_path}/plant/errors.csv"
    assert config.train.checkpoint_dir == f"{home}/ckpt" and config.bundle == f"{home}/models/q"
    assert config.evaluate.source.url == f"sqlite:///{home}/plant.db"
    assert dict(config.paths_as_written)[f"{home}/results/scores.csv"] == "~/results/scores.csv"
    assert "paths_as_written" not in config.to_dict()
    with pytest.raises(ConfigError, match=r"config: score.output.path: \$MFGTX_UNSET_VARIABLE"):
        load_config(None, ["score.output.path=$MFGTX_UNSET_VARIABLE/scores.csv"])
    with pytest.raises(ConfigError, match="paths_as_written: unknown key"):
        load_config(None, ["paths_as_written=x"])


# --------------------------------------------------------------------------- training


def _train_config(plant: Path, out: Path, **train: object):
    job = quality_job(plant, out)
    job["train"] = {**job["train"], "epochs": 1, **train}
    return load_config(write_job(out / "job.yaml", job))


def test_a_users_folder_named_as_the_bundle_is_refused_before_training(plant, tmp_path):
    config = _train_config(plant, tmp_path)
    folder = Path(str(config.bundle))
    folder.mkdir(parents=True)
    (folder / "line3_setpoints.xlsx").write_text("setpoints")
    with pytest.raises(ConfigError, match=r"bundle: .*quality cannot be replaced by the new "
                       r"bundle: it is a directory with no manifest.json"):  # fmt: skip
        check_train_outputs(config)
    (folder / "manifest.json").write_text('{"format": "another tool"}')
    (folder / "checksum.sha256").write_text("")
    with pytest.raises(ConfigError, match="are not those of an mfgtx bundle"):
        check_train_outputs(config)
    assert sorted(p.name for p in folder.iterdir()) == [
        "checksum.sha256", "line3_setpoints.xlsx", "manifest.json",
    ]  # fmt: skip


def test_checkpoints_the_user_did_not_let_mfgtx_write_are_refused_before_training(
    plant, tmp_path
) -> None:
    folder = tmp_path / "runs"
    (folder / "member-0").mkdir(parents=True)
    (folder / "member-0" / "last.ckpt").write_bytes(b"a checkpoint of another tool")
    config = _train_config(plant, tmp_path, checkpoint_dir=str(folder))
    expected = f"train.checkpoint_dir: {folder} holds member-0/last.ckpt, which {NOT_OURS}"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        check_train_outputs(config)
    for inside in (
        str(config.bundle),
        f"{config.bundle}/ckpt",
        str(Path(str(config.bundle)).parent),
    ):
        config = _train_config(plant, tmp_path, checkpoint_dir=inside)
        with pytest.raises(ConfigError, match="train.checkpoint_dir: .* overlap"):
            check_train_outputs(config)
    (tmp_path / "file.ckpt").write_text("x")
    config = _train_config(plant, tmp_path, checkpoint_dir=str(tmp_path / "file.ckpt"))
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        check_train_outputs(config)


def test_a_users_file_in_the_place_of_the_tiled_errors_file_is_refused(tmp_path) -> None:
    bundle = tmp_path / "models" / "tiles"
    bundle.parent.mkdir()
    Path(f"{bundle}.errors.csv").write_text("photo,comment\nP01,re-shot\n")
    config = load_config(None, [
        f"images={{path: {tmp_path}/manifest.csv, image_size: 32, tiles: {{size: 32, stride: 32}},"
        " masks: {format: labelme, min_defect_px: 10}}",
        f"bundle={bundle}",
    ])  # fmt: skip
    with pytest.raises(ConfigError, match=re.escape(f"bundle: {bundle}.errors.csv {NOT_OURS}")):
        check_train_outputs(config, "vit")
    check_train_outputs(config, "sensor")  # a sensor job writes no such file


@pytest.mark.slow
def test_a_checkpoint_folder_holding_other_files_keeps_them(plant, tmp_path, capsys) -> None:
    folder = tmp_path / "plant_share"
    (folder / "line3").mkdir(parents=True)
    (folder / "notes.txt").write_text("shift notes")
    (folder / "line3" / "setpoints.csv").write_text("tag,value\nT1,180\n")
    job = quality_job(plant, tmp_path)
    job["train"] = {**job["train"], "epochs": 1, "checkpoint_dir": str(folder)}
    code, out, err = _run(capsys, "train", "sensor", str(write_job(tmp_path / "job.yaml", job)))
    assert code == 0, err
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "line3", "line3/setpoints.csv", "notes.txt",
    ]  # fmt: skip
    assert (folder / "notes.txt").read_text() == "shift notes"
    assert Path(summary(out)["bundle"]).is_dir()


def test_a_job_that_fails_before_its_first_checkpoint_leaves_no_folder(plant, tmp_path):
    job = quality_job(plant, tmp_path)
    job["data"]["columns"]["sensors"] = ["no_such_sensor"]
    code = main(["train", "sensor", str(write_job(tmp_path / "job.yaml", job))])
    assert code == 2
    assert not Path(f"{job['bundle']}.ckpt").exists()


# --------------------------------------------------------------------------- scoring


def test_a_users_csv_named_as_the_output_is_refused_before_any_work(
    quality_bundle, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    users = tmp_path / "scores.csv"
    users.write_text(USERS_CSV)
    code, err = _score(capsys, job, f"score.output.path={users}")
    assert code == 2
    assert f"job.yaml: score.output.path: {users} {NOT_OURS}; choose another file or move " in err
    assert err.rstrip().endswith("nothing was written")
    assert users.read_text() == USERS_CSV
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv"]  # no errors file


def test_an_output_is_replaced_by_its_job_until_someone_changes_it(
    quality_bundle, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    out = tmp_path / "scores.csv"
    for _ in range(2):  # the daily re-run into the same files
        code, err = _score(capsys, job, f"score.output.path={out}")
        assert code == 0, err
    scores = pd.read_csv(out)
    scores["operator_note"] = "checked"
    scores.to_csv(out, index=False)
    edited = out.read_bytes()
    code, err = _score(capsys, job, f"score.output.path={out}")
    assert code == 2 and NOT_OURS in err and out.read_bytes() == edited


def test_a_users_file_in_the_errors_place_is_refused(quality_bundle, tmp_path, capsys):
    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    users = tmp_path / "scores.errors.csv"  # where the errors list goes by default
    users.write_text("lot,action\nL1-0001,scrap\n")
    code, err = _score(capsys, job, f"score.output.path={out}")
    assert code == 2 and f"score.errors (default, beside the output): {users} {NOT_OURS}" in err
    assert users.read_text() == "lot,action\nL1-0001,scrap\n" and not out.exists()


def test_a_lock_file_that_is_not_mfgtxs_is_refused(quality_bundle, tmp_path, capsys) -> None:
    job, _ = quality_bundle
    out = tmp_path / "scores.csv"
    lock = tmp_path / "scores.csv.lock"
    lock.write_text("padlock combination 1234 for the cabinet\n")
    code, err = _score(capsys, job, f"score.output.path={out}")
    assert code == 2 and f"its lock file {lock} holds something other than" in err
    assert lock.read_text() == "padlock combination 1234 for the cabinet\n"
    lock.write_text("999999999\n")  # left by a job killed with -9: taken over
    code, err = _score(capsys, job, f"score.output.path={out}")
    assert code == 0, err


def test_hidden_files_beside_an_output_are_kept(quality_bundle, tmp_path, capsys) -> None:
    job, _ = quality_bundle
    out = tmp_path / "scores.csv"
    (tmp_path / ".scores.csv.old").write_text("yesterday's, kept by hand")
    (tmp_path / ".scores.csv.k1ll3d.tmp").write_text("an editor's swap file")
    (tmp_path / ".scores.csv.backup.old").mkdir()
    (tmp_path / ".scores.csv.backup.old" / "scores.csv").write_text("lot\n")
    code, err = _score(capsys, job, f"score.output.path={out}")
    assert code == 0, err
    assert (tmp_path / ".scores.csv.old").read_text() == "yesterday's, kept by hand"
    assert (tmp_path / ".scores.csv.k1ll3d.tmp").exists()
    assert (tmp_path / ".scores.csv.backup.old" / "scores.csv").read_text() == "lot\n"


def test_home_and_variables_in_output_paths_write_where_the_checks_looked(
    quality_bundle, tmp_path, monkeypatch, capsys
) -> None:
    job, _ = quality_bundle
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RESULTS", str(tmp_path / "results"))
    monkeypatch.chdir(work)
    for written, where in (
        ("~/results/scores.csv", home / "results" / "scores.csv"),
        ("$HOME/line3/scores.csv", home / "line3" / "scores.csv"),
        ("${RESULTS}/scores.csv", tmp_path / "results" / "scores.csv"),
    ):
        code, err = _score(capsys, job, f"score.output.path={written}")
        assert code == 0, err
        assert where.is_file() and where.with_name("scores.errors.csv").is_file()
    assert list(work.iterdir()) == []  # no folder literally named ~ or $HOME
    users = home / "results" / "mine.csv"
    users.write_text(USERS_CSV)
    code, err = _score(capsys, job, "score.output.path=~/results/mine.csv")
    assert code == 2 and f"score.output.path: ~/results/mine.csv ({users}) {NOT_OURS}" in err
    monkeypatch.delenv("MFGTX_UNSET_VARIABLE", raising=False)
    code, err = _score(capsys, job, "score.output.path=$MFGTX_UNSET_VARIABLE/scores.csv")
    assert code == 2 and "score.output.path: $MFGTX_UNSET_VARIABLE in" in err
    assert list(work.iterdir()) == []


# --------------------------------------------------------------------------- SQL tables


def _db_with_a_users_table(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE scores (lot TEXT, window_end TEXT, verdict TEXT)")
        db.execute("INSERT INTO scores VALUES ('L1-0001', '2026-01-01', 'hold for QA')")
    db.close()


def _table_rows(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        rows = db.execute(f"SELECT * FROM {table}").fetchall()
    db.close()
    return rows


@pytest.mark.parametrize("name", ["scores", "Scores", "main.SCORES"])
def test_a_users_table_named_as_the_sql_output_is_refused(
    quality_bundle, tmp_path, capsys, name
) -> None:
    job, _ = quality_bundle
    db = tmp_path / "plant.db"
    _db_with_a_users_table(db)
    code, err = _score(
        capsys, job, f"score.output={{url: 'sqlite:///{db}', table: {name}}}",
        f"score.errors={tmp_path / 'errors.csv'}",
    )  # fmt: skip
    assert code == 2
    assert f"score.output.table: {name} exists and was not created by mfgtx" in err
    assert _table_rows(db, "scores") == [("L1-0001", "2026-01-01", "hold for QA")]
    assert not (tmp_path / "errors.csv").exists()


def test_a_table_mfgtx_created_takes_the_next_run_under_any_spelling(
    quality_bundle, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    db = tmp_path / "plant.db"
    for name in ("line3_scores", "LINE3_Scores", "main.line3_scores"):
        code, err = _score(
            capsys, job, f"score.output={{url: 'sqlite:///{db}', table: {name}}}",
            f"score.errors={tmp_path / 'errors.csv'}",
        )  # fmt: skip
        assert code == 0, err
    with sqlite3.connect(db) as conn:
        keys = conn.execute("SELECT lot, window_end FROM line3_scores").fetchall()
    conn.close()
    assert len(keys) > 0 and len(set(keys)) == len(keys)  # one row per key, never twice
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["line3_scores"]


@pytest.mark.parametrize("output", ["Sensors", "main.sensors", "MAIN.SENSORS"])
def test_the_source_table_under_another_spelling_is_refused(
    quality_bundle, tmp_path, monkeypatch, capsys, output
) -> None:
    from mfgtx.jobfile.config import SourceSection
    from mfgtx.jobs.copy_sql import copy_to_sql

    job, _ = quality_bundle
    db = tmp_path / "plant.db"
    plant = Path(load_config(job).data.source.path)
    copy_to_sql(SourceSection(path=str(plant)), f"sqlite:///{db}", "sensors")
    before = len(_table_rows(db, "sensors"))
    monkeypatch.chdir(tmp_path)  # the source named relative, the output absolute
    code, err = _score(
        capsys, job, "score.source={url: 'sqlite:///plant.db', table: sensors}",
        f"score.output={{url: 'sqlite:///{db}', table: {output}}}",
    )  # fmt: skip
    assert code == 2 and f"{output} is the table the job reads" in err
    assert len(_table_rows(db, "sensors")) == before


def test_a_copy_replaces_only_a_table_it_created(tmp_path, capsys) -> None:
    from mfgtx.jobfile.config import SourceSection
    from mfgtx.jobs.copy_sql import copy_to_sql
    from pipelines.load_sqlite import main as load_sqlite

    plant = tmp_path / "plant.csv"
    plant.write_text("lot,time,temp\nA,2026-01-01T00:00:00,1.5\nA,2026-01-01T00:01:00,1.6\n")
    db = tmp_path / "plant.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE verdicts (lot TEXT, operator_note TEXT)")
        conn.execute("INSERT INTO verdicts VALUES ('A', 'checked by hand')")
    url = f"sqlite:///{db}"
    with pytest.raises(ValueError, match="'Verdicts' exists and was not created by mfgtx"):
        copy_to_sql(SourceSection(path=str(plant)), url, "Verdicts", replace=True)
    assert load_sqlite([str(plant), str(db), "verdicts"]) == 2
    assert "not created by mfgtx" in capsys.readouterr().err
    assert _table_rows(db, "verdicts") == [("A", "checked by hand")]
    # a table the copy created is its own under any spelling, replaced, not appended to
    assert copy_to_sql(SourceSection(path=str(plant)), url, "Sensors") == 2
    assert copy_to_sql(SourceSection(path=str(plant)), url, "main.SENSORS", replace=True) == 2
    assert len(_table_rows(db, "sensors")) == 2


# --------------------------------------------------------------------------- evaluate, export


@pytest.mark.slow
def test_an_evaluation_report_replaces_only_an_earlier_report(
    quality_bundle, tmp_path, capsys, umask_022
) -> None:
    job, _ = quality_bundle
    users = tmp_path / "review.json"
    users.write_text('{"reviewer": "A. Smith", "approved": true}\n')
    users.chmod(0o600)
    code, _, err = _run(capsys, "evaluate", str(job), "--report", str(users))
    assert code == 2 and f"--report: {users} {NOT_OURS}" in err
    assert users.read_text() == '{"reviewer": "A. Smith", "approved": true}\n'
    assert _mode(users) == 0o600
    report = tmp_path / "report.json"
    write_text(report, "{}")  # an earlier report of mfgtx's
    report.chmod(0o640)
    code, out, err = _run(capsys, "evaluate", str(job), "--report", str(report))
    assert code == 0, err
    assert _mode(report) == 0o640 and json.loads(report.read_text())
    assert summary(out)["report"] == str(report)


def test_an_export_replaces_only_an_unchanged_earlier_export(
    quality_bundle, tmp_path, monkeypatch, capsys
) -> None:
    _, bundle = quality_bundle
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "exports" / "q.onnx"
    for _ in range(2):
        code, _, err = _run(capsys, "export", str(bundle), "--out", "~/exports/q.onnx")
        assert code == 0, err
    with out.open("ab") as f:
        f.write(b"\0")
    edited = out.read_bytes()
    code, _, err = _run(capsys, "export", str(bundle), "--out", "~/exports/q.onnx")
    assert code == 2 and f"--out: ~/exports/q.onnx ({out}) {NOT_OURS}" in err
    assert out.read_bytes() == edited


# --------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="module")
def pg_url() -> str:
    """A PostgreSQL server (as in ``test_postgres.py``): ``MFGTX_TEST_PG_URL`` or the local
    socket's ``mfgtx_test``; skipped without one, except under CI."""
    import sqlalchemy as sa

    url = os.environ.get("MFGTX_TEST_PG_URL")
    engine = sa.create_engine(url or "postgresql+psycopg:///mfgtx_test")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except (sa.exc.OperationalError, ModuleNotFoundError) as e:
        if url or os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL server ({type(e).__name__})")
    finally:
        engine.dispose()
    return url or "postgresql+psycopg:///mfgtx_test"


def _pg(pg_url: str, sql: str) -> list[tuple]:
    import sqlalchemy as sa

    engine = sa.create_engine(pg_url)
    try:
        with engine.begin() as conn:
            result = conn.execute(sa.text(sql))
            return result.fetchall() if result.returns_rows else []
    finally:
        engine.dispose()


@pytest.mark.slow
def test_postgres_tables_are_named_and_owned_as_the_server_resolves_them(
    quality_bundle, pg_url, tmp_path, capsys
) -> None:
    import uuid

    from mfgtx.jobfile.config import SourceSection
    from mfgtx.jobs.copy_sql import copy_to_sql

    job, _ = quality_bundle
    tag = uuid.uuid4().hex[:8]
    sensors, users, ours = f"sensors_{tag}", f"verdicts_{tag}", f"scores_{tag}"
    copy_to_sql(SourceSection(path=str(load_config(job).data.source.path)), pg_url, sensors)
    _pg(pg_url, f"CREATE TABLE {users} (lot text, window_end text, verdict text)")
    _pg(pg_url, f"INSERT INTO {users} VALUES ('L1-0001', '2026-01-01', 'hold for QA')")
    source = f"score.source={{url: '{pg_url}', table: {sensors}, chunk_rows: 300}}"
    errors = f"score.errors={tmp_path / 'errors.csv'}"

    def score(table: str) -> tuple[int, str]:
        return _score(
            capsys, job, source, f"score.output={{url: '{pg_url}', table: {table}}}", errors
        )

    for name in (users.upper(), f"public.{users}", f"PUBLIC.{users.title()}"):
        code, err = score(name)
        assert code == 2 and f"{name} exists and was not created by mfgtx" in err
    assert _pg(pg_url, f"SELECT * FROM {users}") == [("L1-0001", "2026-01-01", "hold for QA")]
    # the source table is read under any spelling too, as the server resolves the name
    upper = f"score.source={{url: '{pg_url}', table: {sensors.upper()}, chunk_rows: 300}}"
    code, err = _score(
        capsys, job, upper, f"score.output={{url: '{pg_url}', table: {ours}}}", errors
    )
    assert code == 0, err
    for name in (sensors.upper(), f"public.{sensors}"):
        code, err = score(name)
        assert code == 2 and f"{name} is the table the job reads" in err
    for name in (ours.title(), f"public.{ours}", ours.upper()):
        code, err = score(name)
        assert code == 0, err
    tables = _pg(pg_url, f"SELECT tablename FROM pg_tables WHERE lower(tablename) = '{ours}'")
    assert tables == [(ours,)]  # one table, named as the server folds an unquoted name
    rows = _pg(pg_url, f"SELECT lot, window_end FROM {ours}")
    assert len(rows) > 0 and len(set(rows)) == len(rows)
    # a copy into the database replaces its own table under any spelling, never a user's
    plant = SourceSection(path=str(load_config(job).data.source.path))
    n = len(_pg(pg_url, f"SELECT * FROM {sensors}"))
    assert copy_to_sql(plant, pg_url, f"PUBLIC.{sensors.upper()}", replace=True) == n
    assert len(_pg(pg_url, f"SELECT * FROM {sensors}")) == n
    with pytest.raises(ValueError, match="was not created by mfgtx"):
        copy_to_sql(plant, pg_url, users.title(), replace=True)
    assert _pg(pg_url, f"SELECT * FROM {users}") == [("L1-0001", "2026-01-01", "hold for QA")]
