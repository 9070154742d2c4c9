"""``mfgtx truth``: inspection results that arrive later, read as the job reads its labels,
recorded in the history and joined to the predictions scored before they arrived."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mfgtx.data import DataError
from mfgtx.history import open_history, predictions_with_truth, read_history
from mfgtx.jobfile._sql import read_engine
from mfgtx.jobs import load_config, score
from mfgtx.jobs._sql import write_engine
from mfgtx.jobs.truth import import_truth
from tests.history.conftest import window_rows

#: A German plant's inspection export: ``;`` between values, decimal commas, cp1252, the
#: plant's words, and four rows that cannot be recorded as they are.
GERMAN = (
    "Los;Prüfdatum;Rauheit_Ra;Ergebnis\r\n"
    "A1;02.03.2026 21:18;0,71;i.O.\r\n"
    "A2;02.03.2026 23:45;1,87;n.i.O.\r\n"
    "A3;03.03.2026 06:41;1,22;vielleicht\r\n"  # line 4: a word the job does not know
    ";03.03.2026 07:00;0,9;i.O.\r\n"  # line 5: no lot
    "A1;03.03.2026 08:00;0,8;n.i.O.\r\n"  # line 6: A1 a second time
    "A4;;;\r\n"  # line 7: not inspected yet
    "A5;04.03.2026 09:00;1,0x;i.O.\r\n"  # line 8: Ra is not a number
)


def _german_job(tmp_path: Path) -> Path:
    job = {
        "data": {
            "source": {"path": str(tmp_path / "messwerte.csv"), "delimiter": ";",
                       "decimal": ",", "encoding": "cp1252"},
            "labels": {"source": {"path": str(tmp_path / "pruefung.csv")}, "on": "Los"},
            "pass_column": "Ergebnis",
            "columns": {"lot": "Los", "time": "Zeit", "sensors": ["Massetemp"],
                        "targets": ["defect", "Rauheit_Ra"]},
        },
        "labels": {"good": ["i.O."], "bad": ["n.i.O."]},
        "history": str(tmp_path / "history.db"),
    }  # fmt: skip
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_a_german_inspection_export_is_recorded_and_its_bad_rows_listed(tmp_path) -> None:
    job = _german_job(tmp_path)
    engine = write_engine(f"sqlite:///{tmp_path / 'history.db'}")
    store = open_history(engine, "history.db")
    run = store.start_run(bundle_id="b1", kind="sensor")
    store.finish_run(run, window_rows(["A1", "A2", "A3"], 0.7), ("lot", "window_end"))
    labels = tmp_path / "pruefung-2026-03-04.csv"
    labels.write_bytes(GERMAN.encode("cp1252"))

    outcome = import_truth(load_config(job), labels)

    joined = predictions_with_truth(store, "A1", "A5", target="defect")
    assert joined.groupby("lot")["truth"].first().fillna("-").to_dict() == {
        "A1": "0.0",  # i.O.: passed, no defect (the first of its two rows)
        "A2": "1.0",  # n.i.O.
        "A3": "-",  # its word is not understood: listed, not guessed
    }
    ra = predictions_with_truth(store, "A1", "A5", target="Rauheit_Ra")
    assert ra.groupby("lot")["truth"].first().fillna("-").to_dict() == {
        "A1": "0.71", "A2": "1.87", "A3": "-",  # a bad row is listed, none of it recorded
    }  # fmt: skip
    errors = pd.read_csv(outcome.errors_file)
    assert outcome.errors_file == str(tmp_path / "pruefung-2026-03-04.truth-errors.csv")
    assert sorted(errors["line"].tolist()) == [4, 5, 6, 8]
    by_line = errors.set_index("line")
    assert by_line.loc[4, "lot"] == "A3" and by_line.loc[4, "column"] == "Ergebnis"
    assert "'vielleicht'" in by_line.loc[4, "reason"] and "n.i.O." in by_line.loc[4, "reason"]
    assert "no lot id" in by_line.loc[5, "reason"]
    assert "second row" in by_line.loc[6, "reason"] and "line 2" in by_line.loc[6, "reason"]
    assert by_line.loc[8, "column"] == "Rauheit_Ra" and "'1,0x'" in by_line.loc[8, "reason"]
    assert "pruefung-2026-03-04.csv line 8" in by_line.loc[8, "reason"]
    assert (outcome.bad_rows, outcome.lots, outcome.with_predictions) == (4, 2, 2)
    assert outcome.empty == 2  # A4's two empty values: not inspected yet, not an error
    engine.dispose()


def test_a_labels_file_without_the_lot_or_any_outcome_column_is_refused_by_name(
    tmp_path,
) -> None:
    job = load_config(_german_job(tmp_path))
    labels = tmp_path / "export.csv"
    labels.write_text("Charge;Ergebnis\nA1;i.O.\n", encoding="cp1252")
    with pytest.raises(DataError, match=r"no lot column 'Los' .*found \['Charge', 'Ergebnis'\]"):
        import_truth(job, labels)
    labels.write_text("Los;Note\nA1;gut\n", encoding="cp1252")
    with pytest.raises(DataError, match=r"no outcome column; expected one of \['defect', "):
        import_truth(job, labels)
    assert not (tmp_path / "history.db").exists()  # nothing opened before the file is read


def test_a_later_labels_file_joins_to_its_predictions(quality_bundle, plant, tmp_path, capsys):
    from mfgtx.cli import main

    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    scored = score(load_config(job, [f"score.output.path={out}"]))
    quality = pd.read_csv(plant / "quality.csv", dtype=str)
    scored_lots = sorted(pd.read_parquet(out)["lot"].astype(str).unique())
    arrived = quality[quality["lot"].isin(scored_lots[:-1])]  # the last lot: not inspected yet
    labels = tmp_path / "inspections-2026-03-06.csv"
    arrived.to_csv(labels, index=False)

    args = ["truth", str(job), "--set", f"score.output.path={out}", "--labels", str(labels)]
    assert main(args) == 0
    said = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert said["recorded"] == len(arrived) and said["with_predictions"] == len(arrived)
    assert said["bad_rows"] == 0

    engine = read_engine(f"sqlite:///{tmp_path / 'history.db'}")
    joined = predictions_with_truth(
        read_history(engine, "history.db"), scored_lots[0], scored_lots[-1], target="defect"
    )
    engine.dispose()
    assert len(joined) == scored.output_rows
    defect = {r.lot: "0.0" if r.passed == "True" else "1.0" for r in arrived.itertuples()}
    got = joined["truth"].fillna("-").groupby(joined["lot"]).agg(set).to_dict()
    assert got == {**{lot: {v} for lot, v in defect.items()}, scored_lots[-1]: {"-"}}
    assert set(joined.loc[joined["truth"].notna(), "truth_source"]) == {str(labels)}


def test_the_truth_of_one_window_joins_by_its_cycle(tmp_path) -> None:
    job = {
        "data": {
            "source": {"path": str(tmp_path / "fleet.csv")},
            "columns": {"lot": "machine", "time": "cycle", "sensors": ["vibration"],
                        "targets": ["rul_cycles"]},
        },
        "history": str(tmp_path / "history.db"),
    }  # fmt: skip
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    engine = write_engine(f"sqlite:///{tmp_path / 'history.db'}")
    store = open_history(engine, "history.db")
    run = store.start_run(bundle_id="b1", kind="sensor")
    rows = pd.DataFrame({"lot": "M01", "window_end": [10, 9, 100], "rul_cycles": [80, 81, 3]})
    store.finish_run(run, rows, ("lot", "window_end"))
    labels = tmp_path / "failed.csv"
    labels.write_text("machine,cycle,rul_cycles\nM01,9,95\nM01,10,94\nM01,100,4\n")

    import_truth(load_config(path), labels, window_end="cycle")

    joined = predictions_with_truth(store, "M01", "M01", target="rul_cycles")
    assert joined["window_end"].tolist() == ["9", "10", "100"]  # as numbers, not as text
    assert joined["truth"].tolist() == ["95.0", "94.0", "4.0"]
    engine.dispose()


def test_the_scheduler_script_is_mfgtx_truth(tmp_path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    job = _german_job(tmp_path)
    labels = tmp_path / "pruefung.csv"
    labels.write_bytes("Los;Ergebnis\r\nA1;i.O.\r\nA2;n.i.O.\r\n".encode("cp1252"))
    done = subprocess.run(
        [sys.executable, str(root / "pipelines" / "truth.py"), str(job), "--labels", str(labels)],
        capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert (said["command"], said["recorded"], said["with_predictions"]) == ("truth", 2, 0)


def test_a_parquet_labels_file_and_a_comma_the_job_does_not_expect(tmp_path) -> None:
    job = {
        "data": {
            "source": {"path": str(tmp_path / "sensors.csv")},
            "columns": {"lot": "lot", "time": "t", "sensors": ["x"], "targets": ["ra"]},
        },
        "history": str(tmp_path / "history.db"),
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    parquet = tmp_path / "lab.parquet"
    pd.DataFrame({"lot": ["A1", "A2"], "ra": [0.7, 1.9]}).to_parquet(parquet)
    assert import_truth(load_config(path), parquet).recorded == 2
    csv = tmp_path / "lab.csv"
    csv.write_text("lot;ra\nA3;0,71\n", encoding="utf-8")  # the job reads '.' decimals
    outcome = import_truth(load_config(path), csv)
    reason = pd.read_csv(outcome.errors_file)["reason"].iloc[0]
    assert "'0,71'" in reason and "decimal comma" in reason and "decimal: ','" in reason
