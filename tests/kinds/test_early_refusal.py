"""A model-section value the model cannot take is refused when the job file is read, by the
model config's own rule (one copy: the same rule refuses a config built from Python)."""

from __future__ import annotations

import pytest

from mfgtx.jobs import ConfigError, load_config
from mfgtx.models import ForecasterConfig, SensorEncoderConfig, ViTConfig

# (job-file text, the message of the job file, the model config and the values it refuses)
CASES = [
    (
        "model:\n  d_model: 30\n  n_heads: 4\n",
        "job.yaml: model: d_model=30 is not divisible by n_heads=4",
        SensorEncoderConfig,
        {"n_channels": 3, "max_len": 20, "d_model": 30, "n_heads": 4},
    ),
    (
        "model:\n  tokens: sensor\n  patch_len: 4\n",
        "job.yaml: model: tokens='sensor' makes one token per sensor",
        SensorEncoderConfig,
        {"n_channels": 3, "max_len": 20, "tokens": "sensor", "patch_len": 4},
    ),
    (
        "model:\n  quantiles: [0.1, 0.9]\n",  # a job's model is a classifier by default
        "job.yaml: model: quantiles need task='regression'",
        SensorEncoderConfig,
        {"n_channels": 3, "task": "classification", "n_outputs": 2, "quantiles": (0.1, 0.9)},
    ),
    (
        "forecast:\n  d_model: 30\n  n_heads: 4\n",
        "job.yaml: forecast: d_model=30 is not divisible by n_heads=4",
        ForecasterConfig,
        {"n_channels": 2, "d_model": 30, "n_heads": 4},
    ),
    (
        "forecast:\n  head: autoregressive\n  horizon: 10\n  patch_len: 4\n",
        "job.yaml: forecast: head='autoregressive' generates 4 steps (stride) at a time: "
        "horizon=10 must be a multiple of it",
        ForecasterConfig,
        {"n_channels": 2, "head": "autoregressive", "horizon": 10, "patch_len": 4},
    ),
    (
        "forecast:\n  head: autoregressive\n  linear_skip: learned\n",
        "job.yaml: forecast: linear_skip needs head='direct'",
        ForecasterConfig,
        {"n_channels": 2, "head": "autoregressive", "linear_skip": True},
    ),
    (
        "vit:\n  d_model: 30\n  n_heads: 4\n",
        "job.yaml: vit: d_model=30 is not divisible by n_heads=4",
        ViTConfig,
        {"image_size": 64, "d_model": 30, "n_heads": 4},
    ),
    (
        "vit:\n  patch_size: 12\n",
        "job.yaml: vit: stem='conv' halves the image per layer: patch_size must be a power of "
        "two, found 12",
        ViTConfig,
        {"image_size": 96, "patch_size": 12},
    ),
    (
        "vit:\n  positional: sinusoidal\n  d_model: 34\n  n_heads: 2\n",
        "job.yaml: vit: 2-D sinusoidal positions need d_model divisible by 4, found 34",
        ViTConfig,
        {"image_size": 64, "positional": "sinusoidal", "d_model": 34, "n_heads": 2},
    ),
]


def _load(tmp_path, text: str):
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


@pytest.mark.parametrize(("text", "message", "config", "values"), CASES)
def test_a_value_the_model_cannot_take_is_refused_when_the_job_file_is_read(
    tmp_path, text, message, config, values
) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, text)
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize(("text", "message", "config", "values"), CASES)
def test_the_same_rule_refuses_the_model_config_built_from_python(
    text, message, config, values
) -> None:
    # the job file's message is the model config's, after "job.yaml: <section>: "
    with pytest.raises(ValueError) as e:
        config(**values)
    assert str(e.value).startswith(message.split(": ", 2)[2]), str(e.value)


def test_a_job_file_with_values_the_models_take_still_loads(tmp_path) -> None:
    job = _load(
        tmp_path,
        "model:\n  d_model: 16\n  n_heads: 2\n  task: regression\n  quantiles: [0.1, 0.9]\n"
        "forecast:\n  head: autoregressive\n  horizon: 16\n  patch_len: 4\n"
        "vit:\n  patch_size: 16\n  d_model: 32\n",
    )
    assert (job.model.d_model, job.forecast.horizon, job.vit.patch_size) == (16, 16, 16)


def test_the_loss_and_guard_keys_of_a_vit_section_are_refused_when_read(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"^job.yaml: vit: label_smoothing must be in \[0, 1\)"):
        _load(tmp_path, "vit:\n  label_smoothing: 1.0\n")
    with pytest.raises(ConfigError, match="^job.yaml: vit: source_size must be a positive"):
        _load(tmp_path, "vit:\n  source_size: 0\n")


def test_a_patch_size_that_does_not_divide_the_image_size_is_refused_before_any_image(
    tmp_path,
) -> None:
    # images.image_size is the job's, not the data's: train refuses it before reading a file
    from mfgtx.kinds import VIT

    job = _load(
        tmp_path,
        f"images:\n  path: {tmp_path / 'no-such-folder'}\n  image_size: 96\n"
        "vit:\n  patch_size: 64\n",
    )
    with pytest.raises(ConfigError) as e:
        VIT.check_train(job)
    assert str(e.value) == (
        "job.yaml: images.image_size, vit.patch_size: image_size=96 is not a multiple of "
        "patch_size=64"
    )
