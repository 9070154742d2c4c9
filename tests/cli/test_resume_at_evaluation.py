"""A job killed after training, while it judges the model, resumes there: no training step
runs again, and settings that do not change the weights (scoring views, the cost of a missed
defect) may change on ``--resume``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from mfgtx.jobs import load_config, train
from mfgtx.train.checkpoint import load_checkpoint
from tests.cli.conftest import quality_job, write_job
from tests.cli.test_jobs_tiles import photos, tiles_job  # noqa: F401 (fixture)

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow


class Killed(MemoryError):
    """Stands in for the kernel's out-of-memory kill while the model is judged."""


def _steps(kind: str, job: Path, *overrides: str, resume: bool = False) -> tuple[object, int]:
    steps: list[int] = []
    outcome = train(kind, load_config(job, overrides), resume=resume,
                    on_step=lambda step, loss: steps.append(step))  # fmt: skip
    return outcome, len(steps)


def _killed_while_judging(monkeypatch: pytest.MonkeyPatch, target: str, kind: str,
                          job: Path) -> dict:  # fmt: skip
    """Train ``job`` with ``target`` (the judging step) raising; the checkpoint it leaves."""

    def boom(*args: object, **kwargs: object) -> None:
        raise Killed("killed while judging")

    with monkeypatch.context() as m:
        m.setattr(target, boom)
        with pytest.raises(Killed):
            train(kind, load_config(job))
    cfg = load_config(job)
    return load_checkpoint(Path(f"{cfg.bundle}.ckpt") / "last.ckpt")


def test_a_tiled_job_killed_while_judging_resumes_without_training_with_other_views(
    photos: Path,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = write_job(tmp_path / "job.yaml", tiles_job(photos, tmp_path))
    ckpt = _killed_while_judging(monkeypatch, "mfgtx.kinds.vit.tile_scores.judge_tiles", "vit", job)
    assert ckpt["phase"] == "trained" and ckpt["epoch"] == 2
    # the scoring views and the cost ratio change: the weights do not depend on them
    outcome, steps = _steps("vit", job, "images.views=4", "calibration.cost_ratio=3",
                            resume=True)  # fmt: skip
    assert steps == 0
    assert outcome.resumed_from_epoch == 2 and outcome.epochs_run == 2
    import mfgtx

    predictor = mfgtx.load(outcome.bundle)
    assert predictor.input_spec.views == 4
    assert predictor.calibration.threshold.cost_missed_defect == 3
    saved = predictor.model.state_dict()
    assert all(torch.equal(saved[k], v) for k, v in ckpt["best_state"].items())


def test_a_sensor_job_killed_while_calibrating_resumes_at_evaluation(
    plant: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    ckpt = _killed_while_judging(monkeypatch, "mfgtx.kinds.sensor.fit_calibration", "sensor", job)
    assert ckpt["phase"] == "trained"
    outcome, steps = _steps("sensor", job, "calibration.cost_ratio=2", resume=True)
    assert steps == 0 and outcome.bundle_id


def test_a_job_killed_while_training_still_trains_what_is_left(
    plant: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The phase tells the two apart: a checkpoint of an unfinished training trains on."""
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path, train={
        "epochs": 3, "batch_size": 16, "patience": None, "progress": "log"}))  # fmt: skip
    import mfgtx.train.loop as loop

    real = loop._train_epoch
    calls = []

    def once_then_die(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise Killed("killed in the second epoch")
        return real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(loop, "_train_epoch", once_then_die)
        with pytest.raises(Killed):
            train("sensor", load_config(job))
    ckpt = load_checkpoint(Path(f"{load_config(job).bundle}.ckpt") / "last.ckpt")
    assert ckpt["phase"] == "training" and ckpt["epoch"] == 1
    # a setting that changes the weights is still refused on resume
    with pytest.raises(Exception, match="other settings or data"):
        train("sensor", load_config(job, ["model.d_model=16"]), resume=True)
    outcome, steps = _steps("sensor", job, resume=True)
    assert steps > 0 and outcome.resumed_from_epoch == 1 and outcome.epochs_run == 3
