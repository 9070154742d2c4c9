"""A job never writes over its inputs, a bundle, or a file it did not write."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import shutil
from pathlib import Path

import pytest

from mfgtx.cli import main
from tests.cli.conftest import quality_job, summary, write_job


def _digest(path: Path) -> str:
    if path.is_dir():
        return "".join(_digest(p) for p in sorted(path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _score(capsys, job: Path, *overrides: str) -> tuple[int, str]:
    args = ["score", str(job)]
    for o in overrides:
        args += ["--set", o]
    code = main(args)
    return code, capsys.readouterr().err


def test_errors_file_set_to_the_input_csv_is_refused(quality_bundle, plant, capsys) -> None:
    job, _ = quality_bundle
    source = plant / "sensors.csv"
    before = _digest(source)
    code, err = _score(capsys, job, f"score.errors={source}")
    assert code == 2 and "is the job's input (data.source.path)" in err
    assert _digest(source) == before


def test_errors_or_output_inside_the_bundle_are_refused(quality_bundle, capsys) -> None:
    job, bundle = quality_bundle
    before = _digest(bundle)
    code, err = _score(capsys, job, f"score.errors={bundle / 'weights.safetensors'}")
    assert code == 2 and "weights.safetensors" in err
    code, err = _score(capsys, job, f"score.errors={bundle / 'errors.csv'}")
    assert code == 2 and "lies inside the bundle" in err
    code, err = _score(capsys, job, f"score.output.path={bundle / 'scores.parquet'}")
    assert code == 2 and "lies inside the bundle" in err
    assert _digest(bundle) == before


def test_output_inside_another_bundle_is_refused(quality_bundle, tmp_path, capsys) -> None:
    job, bundle = quality_bundle
    other = tmp_path / "other_bundle"
    shutil.copytree(bundle, other)
    code, err = _score(capsys, job, f"score.output.path={other / 'scores.csv'}")
    assert (
        code == 2 and "lies inside the model bundle" in err and not (other / "scores.csv").exists()
    )


def test_output_inside_a_source_folder_is_refused(quality_bundle, plant, tmp_path, capsys):
    job, _ = quality_bundle
    folder = tmp_path / "export"
    folder.mkdir()
    shutil.copy(plant / "sensors.csv", folder / "part-0.csv")
    code, err = _score(
        capsys, job, f"score.source={{path: {folder}}}", f"score.output.path={folder / 'out.csv'}"
    )
    assert code == 2 and "inside the input folder" in err
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.csv"]


def test_an_existing_csv_that_is_not_an_error_list_is_never_replaced(
    quality_bundle, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    mine = tmp_path / "my_notes.csv"
    mine.write_text("lot,comment\nL1-0001,checked by hand\n")
    code, err = _score(
        capsys, job, f"score.errors={mine}", f"score.output.path={tmp_path / 's.parquet'}"
    )
    assert code == 2 and f"{mine} exists and was not written by mfgtx" in err
    assert mine.read_text() == "lot,comment\nL1-0001,checked by hand\n"
    code, err = _score(capsys, job, f"score.errors={tmp_path / 'errors.txt'}")
    assert code == 2 and "errors: the error list is a .csv file" in err


def test_output_and_errors_must_differ(quality_bundle, tmp_path, capsys) -> None:
    job, _ = quality_bundle
    same = tmp_path / "both.csv"
    code, err = _score(capsys, job, f"score.output.path={same}", f"score.errors={same}")
    assert code == 2 and "give each output its own file" in err and not same.exists()


@pytest.mark.slow
def test_retraining_into_a_bundle_holding_other_files_is_refused_before_training(
    plant, tmp_path, capsys
) -> None:
    spec = quality_job(plant, tmp_path)
    job = write_job(tmp_path / "job.yaml", spec)
    assert main(["train", "sensor", str(job)]) == 0
    bundle = Path(summary(capsys.readouterr().out)["bundle"])
    (bundle / "scores.csv").write_text("lot,window_end\nL1,1\n")  # someone's output in there
    code = main(["train", "sensor", str(job)])
    err = capsys.readouterr().err
    assert code == 2 and "also holds ['scores.csv']" in err
    assert (bundle / "scores.csv").read_text() == "lot,window_end\nL1,1\n"
    assert not Path(f"{bundle}.ckpt").exists()  # refused before any epoch


def test_a_bundle_over_an_input_folder_is_refused(plant, tmp_path, capsys) -> None:
    spec = quality_job(plant, tmp_path)
    spec["bundle"] = str(plant)  # the folder that holds sensors.csv
    job = write_job(tmp_path / "job.yaml", spec)
    code = main(["train", "sensor", str(job)])
    assert code == 2 and "overlap" in capsys.readouterr().err
    assert (plant / "sensors.csv").is_file()


def test_a_sql_output_over_the_source_table_is_refused(quality_bundle, tmp_path, capsys):
    job, _ = quality_bundle
    url = f"sqlite:///{tmp_path / 'plant.db'}"
    code, err = _score(
        capsys, job, f"score.source={{url: '{url}', table: sensors}}",
        f"score.output={{url: '{url}', table: sensors}}",
    )  # fmt: skip
    assert code == 2 and "is the table the job reads" in err


def test_evaluate_report_over_an_input_is_refused(quality_bundle, plant, capsys) -> None:
    job, _ = quality_bundle
    before = _digest(plant / "quality.csv")
    code = main(["evaluate", str(job), "--report", str(plant / "quality.csv")])
    assert code == 2 and "is the job's input" in capsys.readouterr().err
    assert _digest(plant / "quality.csv") == before


def _killed_write(target: Path) -> Path:
    """The temporary a job killed (``kill -9``) in the middle of writing ``target`` leaves."""
    from mfgtx._files import atomic_write

    ctx = mp.get_context("fork")

    def die_while_writing(tmp: str) -> None:
        Path(tmp).write_bytes(b"x" * 1_000_000)
        os._exit(9)  # no cleanup runs

    p = ctx.Process(target=atomic_write, args=(target, die_while_writing))
    p.start()
    p.join(30)
    assert p.exitcode == 9
    (left,) = (q for q in target.parent.iterdir() if q.name.startswith(f".{target.name}."))
    return left


def test_temporaries_of_a_killed_write_are_removed_by_the_next_run(
    quality_bundle, tmp_path, capsys
) -> None:
    job, _ = quality_bundle
    out = tmp_path / "scores.csv"
    left = _killed_write(out)
    assert "mfgtx-" in left.name and left.name.endswith(".tmp")  # mfgtx's token in the name
    other = tmp_path / ".someone_elses.csv.tmp"
    other.write_text("not ours")
    code, err = _score(capsys, job, f"score.output.path={out}")
    assert code == 0, err
    assert not left.exists() and other.exists() and out.is_file()
