"""``train.sweep``: trials chosen on the validation lots alone, the chosen one judged once on
the test lots, every trial in the report; the same choice and figures on Ray."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

import mfgtx
from mfgtx.engine import EngineSpec
from mfgtx.jobfile.config import ConfigError
from mfgtx.jobs import load_config, train
from mfgtx.kinds.sensor import SensorKind

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
GRID = {"lr": [0.001, 0.01], "d_model": [8, 16]}


def rul_job(data: Path, out: Path, **train: Any) -> dict[str, Any]:
    """A tiny remaining-life job on the sample plant's run-to-failure machines."""
    return {
        "data": {
            "source": {"path": str(data)},
            "label_known": "lot_end",
            "columns": {
                "lot": "machine",
                "time": "timestamp",
                "targets": ["rul_cycles"],
                "label_time": "failed_at",
                "sensors": ["load_pct", "vibration_mm_s", "bearing_temp_c"],
            },
        },
        "windows": {"window": 20, "stride": 10},
        "split": {"test_size": 0.25, "val_size": 0.2, "gap": "2h"},
        "model": {
            "task": "regression",
            "tokens": "sensor",
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "dropout": 0.0,
            "target_scale": 100.0,
        },
        "train": {
            "epochs": 2,
            "batch_size": 32,
            "patience": None,
            "progress": "off",
            "precision": "fp32",
            "threads": 1,  # per trial, here as on Ray: the same sums, the same figures
            "sweep": GRID,
            **train,
        },
        "calibration": {"intervals": "off"},
        "bundle": str(out / "bundle"),
    }


def write(path: Path, job: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


class Judged:
    """Counts the kind's judging on the test lots (wrapping ``SensorKind.judge``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        judge = SensorKind.judge

        def counted(kind: Any, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return judge(kind, *args, **kwargs)

        monkeypatch.setattr(SensorKind, "judge", counted)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("sweep")
    job = write(out / "job.yaml", rul_job(SAMPLE / "degradation.csv", out))
    with pytest.MonkeyPatch.context() as mp:
        judged = Judged(mp)
        outcome = train("sensor", load_config(job))
    assert judged.calls == 1  # the test lots were read once: for the chosen trial
    return job, outcome


def test_the_chosen_trial_has_the_lowest_validation_loss_and_is_the_bundle(swept) -> None:
    _, outcome = swept
    table = outcome.summary()["sweep"]
    trials = table["trials"]
    assert [t["values"] for t in trials] == [
        {"lr": lr, "d_model": d} for lr in GRID["lr"] for d in GRID["d_model"]
    ]  # every trial of the grid, in its order
    losses = [t["val_loss"] for t in trials]
    assert len(set(losses)) == len(losses)  # the grid's trials differ: the choice means something
    best = trials[int(np.argmin(losses))]
    assert table["chosen"] == best["number"]
    predictor = mfgtx.load(outcome.bundle)
    assert predictor.model.config.d_model == best["values"]["d_model"]
    recorded = predictor.bundle.manifest["extra"]["job_file"]
    assert recorded["train"]["lr"] == best["values"]["lr"]
    assert recorded["model"]["d_model"] == best["values"]["d_model"]
    assert recorded["train"]["sweep"] is None  # the bundle records the job of its own model
    assert predictor.report.sweep is not None and predictor.report.sweep.chosen == table["chosen"]
    assert predictor.bundle.manifest["metrics"]["sweep"]["trials"] == trials
    # the epochs the trial trained, not the resume that judged it
    assert outcome.epochs_run == best["epochs"] and outcome.resumed_from_epoch == 0


def test_the_report_lists_every_trial(swept) -> None:
    _, outcome = swept
    lines = outcome.report_markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Sweep:"))
    assert "validation lot" in lines[start] and "test lot" in lines[start]
    assert lines[start + 2].split("|")[2:4] == [" lr ", " d_model "]
    rows = [line for line in lines[start + 4 :] if line.startswith("|")]
    trials = outcome.summary()["sweep"]["trials"]
    assert len(rows) == len(trials) == 4
    chosen = outcome.summary()["sweep"]["chosen"]
    assert sum("(chosen)" in r for r in rows) == 1 and f"**{chosen} (chosen)**" in rows[chosen - 1]
    for row, trial in zip(rows, trials, strict=True):
        assert f"{trial['val_loss']:.4g}" in row


def test_the_test_lots_never_decide(swept, tmp_path) -> None:
    """The test lots' targets made absurd: the test report changes, the choice and every
    trial's validation figures do not."""
    _, outcome = swept
    predictor = mfgtx.load(outcome.bundle)
    test_lots = predictor.audit.summary["sets"]["test"]["lots"]
    frame = pd.read_csv(SAMPLE / "degradation.csv")
    poisoned = frame["machine"].astype(str).isin([str(x) for x in test_lots])
    assert poisoned.any() and not poisoned.all()
    frame.loc[poisoned, "rul_cycles"] = frame.loc[poisoned, "rul_cycles"][::-1].to_numpy() * 7.0
    frame.to_csv(tmp_path / "poisoned.csv", index=False)
    again = train(
        "sensor",
        load_config(write(tmp_path / "job.yaml", rul_job(tmp_path / "poisoned.csv", tmp_path))),
    )
    assert again.metrics != outcome.metrics  # the poison reached the test report
    before, after = outcome.summary()["sweep"], again.summary()["sweep"]
    assert after["chosen"] == before["chosen"]
    assert [t["val_loss"] for t in after["trials"]] == [t["val_loss"] for t in before["trials"]]


def test_a_trial_that_diverges_is_listed_and_never_chosen(tmp_path) -> None:
    job = rul_job(SAMPLE / "degradation.csv", tmp_path, grad_clip=None)
    job["train"]["sweep"] = {"lr": [1e9, 0.01]}  # the first's loss overflows at once
    outcome = train("sensor", load_config(write(tmp_path / "job.yaml", job)))
    table = outcome.summary()["sweep"]
    assert [t["val_loss"] is None for t in table["trials"]] == [True, False]
    assert table["chosen"] == 2 and mfgtx.load(outcome.bundle).report.sweep.chosen == 2


@pytest.mark.parametrize(
    ("sweep", "words"),
    [
        ({"lr": [0.001], "d_modl": [8]}, "train.sweep.d_modl: unknown key"),
        ({"lr": []}, "sweep.lr: give at least one value"),
        ({"d_model": [9]}, "trial 1 (d_model=9) does not fit the rest of the job"),
        ({"d_model": ["wide"]}, "train.sweep.d_model: expected a whole number, found 'wide'"),
        ({"task": ["classification"]}, "task changes what the validation loss measures"),
        ({"device": ["cpu"]}, "not a train key a sweep can try"),
        ({"lr": [0.001, 0.001]}, "0.001 is listed twice"),
    ],
)
def test_a_sweep_that_cannot_run_is_refused_before_any_data_is_read(
    sweep: dict[str, Any], words: str, tmp_path: Path
) -> None:
    job = rul_job(tmp_path / "missing.csv", tmp_path)  # never read: refused first
    job["train"]["sweep"] = sweep
    with pytest.raises(ConfigError, match=re.escape(words)):
        train("sensor", load_config(write(tmp_path / "job.yaml", job)))


def test_a_sweep_on_ray_makes_the_local_choice_with_the_local_figures(
    ray_local, swept, tmp_path
) -> None:
    """The trials as Ray tasks (two at once, one thread each): the same trials, validation
    losses, choice and test report as the run in this process, with one thread per trial."""
    _, local = swept
    job = write(tmp_path / "job.yaml", rul_job(SAMPLE / "degradation.csv", tmp_path))
    here = []  # the kind's training in this process (a Ray worker does not see the spy)
    trains = SensorKind.train
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            SensorKind, "train", lambda kind, *a, **k: here.append(1) or trains(kind, *a, **k)
        )
        on_ray = train("sensor", load_config(job), engine=EngineSpec("ray", workers=2))
    assert len(here) == 1  # the chosen trial judged here; the four trials trained on Ray
    assert on_ray.summary()["sweep"]["chosen"] == local.summary()["sweep"]["chosen"]
    for a, b in zip(on_ray.summary()["sweep"]["trials"], local.summary()["sweep"]["trials"],
                    strict=True):  # fmt: skip
        assert (a["values"], a["val_loss"], a["best_epoch"]) == (
            b["values"], b["val_loss"], b["best_epoch"])  # fmt: skip
    assert on_ray.metrics == local.metrics
    ours, theirs = mfgtx.load(local.bundle).model, mfgtx.load(on_ray.bundle).model
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(),
               theirs.state_dict().values(), strict=True))  # fmt: skip


class LostOnce:
    """An engine whose every task's first worker is lost after the task trained (its result
    never came back), so the task runs again, as Ray runs it after a worker died."""

    def __init__(self) -> None:
        self.spec = EngineSpec("ray", workers=1)
        self.resumed: list[int] = []

    def map(self, fn, items, *, shared=None, names=None):
        from mfgtx.engine._task import run_task  # each task as an engine runs it: 1 thread

        out = []
        for item in items:
            run_task(fn, item, 1, shared or {})  # the first attempt: its worker dies after
            done = run_task(fn, item, 1, shared or {})
            self.resumed.append(done.fit.resumed_from_epoch)
            out.append(done)
        return out


def test_a_trial_run_again_after_its_worker_died_resumes_from_its_checkpoint(
    swept, tmp_path, monkeypatch
) -> None:
    """Ray runs a trial again when its worker dies: the retry resumes from the trial's last
    checkpoint (as an ensemble member does) instead of training from the first epoch, and
    the sweep makes the same choice with the same figures."""
    import sys
    from contextlib import contextmanager

    train_job = sys.modules["mfgtx.jobs.train"]  # the module (mfgtx.jobs.train is the function)
    engine = LostOnce()

    @contextmanager
    def opened(spec):
        yield engine

    monkeypatch.setattr(train_job, "open_engine", opened)
    _, local = swept
    job = write(tmp_path / "job.yaml", rul_job(SAMPLE / "degradation.csv", tmp_path))
    again = train("sensor", load_config(job), engine=EngineSpec("ray", workers=1))
    assert engine.resumed == [2, 2, 2, 2]  # every retry found its trial's two epochs done
    assert again.summary()["sweep"]["chosen"] == local.summary()["sweep"]["chosen"]
    assert again.metrics == local.metrics
