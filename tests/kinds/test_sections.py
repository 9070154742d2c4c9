"""A job-file key reaches its model config in one typed hop, with the job file's default."""

from __future__ import annotations

import dataclasses

import pytest

from mfgtx.jobs.config import TrainSection, train_config
from mfgtx.kinds import ForecastSection, SensorSection, VitSection
from mfgtx.models import ForecasterConfig, SensorEncoderConfig, ViTConfig
from mfgtx.train import TrainConfig

# (section, its model config, what the data decides, a valid value for every setting)
CASES = [
    (
        VitSection,
        ViTConfig,
        {"image_size": 64, "in_chans": 3, "num_classes": 3, "class_weights": (1.0, 2.0, 3.0)},
        dict(
            patch_size=16, d_model=32, n_heads=2, n_layers=3, d_ff=48, dropout=0.2, drop_path=0.1,
            stem="linear", stem_channels=16, pooling="mean", positional="sinusoidal",
            label_smoothing=0.1, min_defect_px=40.0, source_size=256, strict_defect_size=True,
        ),
    ),
    (
        SensorSection,
        SensorEncoderConfig,
        {"n_channels": 3, "max_len": 24, "n_outputs": 2, "class_weights": (1.0, 4.0)},
        dict(
            task="regression", quantiles=(0.1, 0.9), tokens="time", patch_len=4, stride=2,
            channel_independent=True, d_model=16, n_heads=2, n_layers=1, d_ff=24, dropout=0.0,
            positional="learned", norm_first=False, pooling="cls", target_scale=10.0,
        ),
    ),
    (
        ForecastSection,
        ForecasterConfig,
        {"n_channels": 2, "context_length": 64, "n_past_covariates": 1, "n_future_covariates": 0},
        dict(
            horizon=8, patch_len=4, stride=2, d_model=16, n_heads=2, n_layers=1, d_ff=24,
            dropout=0.0, head="direct", channel_independent=False, quantiles=(0.5,),
            revin=False, positional="learned", norm_first=False, head_dropout=0.1,
            linear_skip="learned",
        ),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("section", "config", "data", "values"), CASES)
def test_every_setting_of_a_section_reaches_the_model_config(section, config, data, values):
    names = {f.name for f in dataclasses.fields(config)}
    assert set(values) | set(data) == names  # the section and the data cover the config
    assert set(values) <= {f.name for f in dataclasses.fields(section)}
    if section is SensorSection:  # a regressor's outputs are its targets
        data = {**data, "class_weights": None}
    built = section(**values).model_config(**data)
    assert isinstance(built, config)
    for name, value in {**values, **data}.items():
        if section is ForecastSection and name == "linear_skip":
            value = True  # off / learned / ridge: the model has a skip or not
        assert getattr(built, name) == value, name


def test_the_job_file_defaults_are_those_of_the_previous_version() -> None:
    # job files that leave these keys out must train the same models as before
    vit, sensor, forecast = VitSection(), SensorSection(), ForecastSection()
    assert (vit.patch_size, vit.stem, vit.d_model, vit.n_heads, vit.n_layers, vit.d_ff) == (
        8, "conv", 64, 4, 4, 128,
    )  # fmt: skip
    assert vit.dropout == 0.1
    assert (sensor.task, sensor.d_model, sensor.n_layers, sensor.d_ff) == (
        "classification", 32, 2, 64,
    )  # fmt: skip
    assert (forecast.horizon, forecast.patch_len, forecast.d_model, forecast.quantiles) == (
        24, 8, 32, (0.1, 0.5, 0.9),
    )  # fmt: skip
    assert TrainSection().batch_size == 32


def test_the_train_section_is_its_train_config_with_the_run_s_flags() -> None:
    section = TrainSection(epochs=3, lr=0.01, seed=7)
    config = train_config(section, "ckpt", resume=True)
    assert isinstance(config, TrainConfig)
    assert (config.epochs, config.lr, config.seed, config.batch_size) == (3, 0.01, 7, 32)
    assert (config.checkpoint_dir, config.resume) == ("ckpt", True)
    with pytest.raises(ValueError, match="lr must be positive"):
        TrainSection(lr=-1.0)


def test_a_forecast_section_refuses_ridge_without_a_direct_head() -> None:
    with pytest.raises(ValueError, match="linear_skip: ridge needs head: direct"):
        ForecastSection(linear_skip="ridge", head="autoregressive")


def test_a_setting_the_model_cannot_take_is_named_when_training(plant, tmp_path, capsys) -> None:
    from mfgtx.cli import main
    from tests.cli.conftest import quality_job, summary, write_job

    job = quality_job(plant, tmp_path)
    job["model"]["n_heads"] = 3  # d_model 8 does not split into 3 heads
    assert main(["train", "sensor", str(write_job(tmp_path / "job.yaml", job))]) == 2
    out = summary(capsys.readouterr().out)
    assert out["error"] == "job.yaml: model: d_model=8 is not divisible by n_heads=3"
