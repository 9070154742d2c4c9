"""A job-file key reaches its model config in one typed hop, with the job file's default."""

from __future__ import annotations

import dataclasses

import pytest

from mfgtx.jobfile.config import TrainSection, train_config
from mfgtx.kinds import ForecastSection, SensorSection, VitSection
from mfgtx.models import (
    ClassLoss,
    DefectSizeGuard,
    DefectSizeWarning,
    ForecasterConfig,
    SensorEncoderConfig,
    ViTConfig,
)
from mfgtx.train import TrainConfig

# (section, its model config, what the data decides, a valid value for every setting)
CASES = [
    (
        VitSection,
        ViTConfig,
        {"image_size": 64, "in_chans": 3, "num_classes": 3},
        dict(
            patch_size=16, d_model=32, n_heads=2, n_layers=3, d_ff=48, dropout=0.2, drop_path=0.1,
            stem="linear", stem_channels=16, pooling="mean", positional="sinusoidal",
        ),
    ),
    (
        SensorSection,
        SensorEncoderConfig,
        {"n_channels": 3, "max_len": 24, "n_outputs": 2},
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
    built = section(**values).model_config(**data)
    assert isinstance(built, config)
    for name, value in {**values, **data}.items():
        if section is ForecastSection and name == "linear_skip":
            value = True  # off / learned / ridge: the model has a skip or not
        assert getattr(built, name) == value, name


#: every key's default in the job files of the previous version (main 66eb24c)
PREVIOUS_JOB_DEFAULTS = {
    VitSection: dict(
        patch_size=8, d_model=64, n_heads=4, n_layers=4, d_ff=128, dropout=0.1, drop_path=0.0,
        stem="conv", stem_channels=24, pooling="cls", positional="learned",
        label_smoothing=0.0, min_defect_px=None, source_size=None, strict_defect_size=False,
    ),
    SensorSection: dict(
        task="classification", quantiles=(), tokens="time", patch_len=1, stride=None,
        channel_independent=False, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.1,
        positional="sinusoidal", norm_first=True, pooling="mean", target_scale=1.0, clip=False,
    ),
    ForecastSection: dict(
        horizon=24, patch_len=8, stride=None, d_model=32, n_heads=4, n_layers=2, d_ff=64,
        dropout=0.1, head="direct", channel_independent=True, quantiles=(0.1, 0.5, 0.9),
        revin=True, positional="sinusoidal", norm_first=True, head_dropout=0.0, targets=(),
        linear_skip="off", pick="validation",
    ),
}  # fmt: skip


@pytest.mark.parametrize("section", list(PREVIOUS_JOB_DEFAULTS), ids=lambda c: c.__name__)
def test_the_job_file_defaults_are_those_of_the_previous_version(section) -> None:
    # job files that leave these keys out must train the same models as before
    assert dataclasses.asdict(section()) == PREVIOUS_JOB_DEFAULTS[section]
    assert TrainSection().batch_size == 32


def test_the_train_section_is_its_train_config_with_the_run_s_flags() -> None:
    section = TrainSection(epochs=3, lr=0.01, seed=7)
    config = train_config(section, "ckpt", resume=True)
    assert isinstance(config, TrainConfig)
    assert (config.epochs, config.lr, config.seed, config.batch_size) == (3, 0.01, 7, 32)
    assert (config.checkpoint_dir, config.resume) == ("ckpt", True)
    with pytest.raises(ValueError, match="lr must be positive"):
        TrainSection(lr=-1.0)


def test_the_loss_and_guard_keys_of_a_vit_section_reach_the_loss_and_the_guard() -> None:
    # loss settings and the data guard are job keys, not the model config's
    section = VitSection(label_smoothing=0.1, min_defect_px=6.0, source_size=512, patch_size=16)
    assert section.loss((1.0, 2.0)) == ClassLoss(class_weights=(1.0, 2.0), label_smoothing=0.1)
    config_names = {f.name for f in dataclasses.fields(ViTConfig)}
    assert not {"class_weights", "label_smoothing", "min_defect_px"} & config_names
    with pytest.warns(DefectSizeWarning, match="6 px in 512 px images resized to 128 px"):
        section.model_config(image_size=128, in_chans=1, num_classes=2)
    strict = dataclasses.replace(section, strict_defect_size=True)
    with pytest.raises(ValueError, match=r"image_size \(>= 683\)"):
        strict.model_config(image_size=128, in_chans=1, num_classes=2)
    with pytest.raises(ValueError, match="label_smoothing must be in"):  # checked with the rest
        VitSection(label_smoothing=1.0).model_config(image_size=64, in_chans=1, num_classes=2)
    with pytest.raises(ValueError, match="source_size must be a positive integer"):
        VitSection(source_size=0).model_config(image_size=64, in_chans=1, num_classes=2)


def test_a_forecast_section_refuses_ridge_without_a_direct_head() -> None:
    # the forecaster's own rule (ForecasterConfig.check): ridge and learned are a skip alike
    for skip in ("ridge", "learned"):
        with pytest.raises(ValueError, match=r"linear_skip needs head='direct'"):
            ForecastSection(linear_skip=skip, head="autoregressive")
    ForecastSection(linear_skip="off", head="autoregressive")


def test_a_setting_the_model_cannot_take_is_named_when_training(plant, tmp_path, capsys) -> None:
    from mfgtx.cli import main
    from tests.cli.conftest import quality_job, summary, write_job

    job = quality_job(plant, tmp_path)
    job["model"]["n_heads"] = 3  # d_model 8 does not split into 3 heads
    assert main(["train", "sensor", str(write_job(tmp_path / "job.yaml", job))]) == 2
    out = summary(capsys.readouterr().out)
    assert out["error"] == "job.yaml: model: d_model=8 is not divisible by n_heads=3"


# -- one default per key ------------------------------------------------------------------------

#: section keys whose default may differ from their model config field's, and why (the
#: sections' docstrings say the same); a key leaves this list when the two agree again
OWN_DEFAULTS = {
    (SensorSection, "task"): "a job's lots pass or fail; a bare config is a one-output regressor",
    (ForecastSection, "linear_skip"): "off / learned / ridge in a job, a yes/no in the model",
}


def _mfgtx_sections() -> list[tuple[type, type]]:
    """(section, model config) of every kind mfgtx registers, from the registry itself."""
    import typing

    from mfgtx.kinds import KINDS

    pairs = []
    for kind in KINDS.values():
        if type(kind).__module__.startswith("mfgtx."):
            config = typing.get_type_hints(kind.model_class.__init__)["config"]
            pairs.append((kind.Section, config))
    return pairs


#: (section, a class beside the model config whose keys the section also holds)
BESIDE = [(VitSection, ClassLoss), (VitSection, DefectSizeGuard)]


def _default(cls: type, name: str) -> object:
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def test_the_three_kinds_are_checked() -> None:
    assert {s for s, _ in _mfgtx_sections()} == {SensorSection, ForecastSection, VitSection}


@pytest.mark.parametrize(
    ("section", "config"), _mfgtx_sections() + BESIDE, ids=lambda c: c.__name__
)
def test_a_section_key_and_its_model_config_field_share_one_default(section, config) -> None:
    config_names = {f.name for f in dataclasses.fields(config)}
    shared = [f.name for f in dataclasses.fields(section) if f.name in config_names]
    assert shared
    two = {
        name: (_default(section, name), _default(config, name))
        for name in shared
        if (section, name) not in OWN_DEFAULTS and _default(section, name) != _default(config, name)
    }
    assert not two, f"{section.__name__}: keys with two defaults (section, model config): {two}"


@pytest.mark.parametrize(
    ("section", "name"), list(OWN_DEFAULTS), ids=lambda x: getattr(x, "__name__", x)
)
def test_the_keys_with_their_own_default_still_differ(section, name) -> None:
    # the exception list stays pinned: a key whose defaults agree again must leave it
    config = dict(_mfgtx_sections())[section]
    assert _default(section, name) != _default(config, name)
    assert name in (section.__doc__ or "")  # and the section's docstring says why


@pytest.mark.parametrize(
    ("section", "config"), _mfgtx_sections() + BESIDE, ids=lambda c: c.__name__
)
def test_a_section_takes_its_defaults_from_the_model_config(section, config) -> None:
    # written once: the section reads each shared key's default from the model config
    import inspect
    import re

    source = inspect.getsource(section)
    config_names = {f.name for f in dataclasses.fields(config)}
    for f in dataclasses.fields(section):
        if f.name in config_names and (section, f.name) not in OWN_DEFAULTS:
            line = rf'^    {f.name}: [^=\n]+ = default_of\(\s*{config.__name__}, "{f.name}"\s*\)$'
            assert re.search(line, source, re.M), f"{section.__name__}.{f.name}"
