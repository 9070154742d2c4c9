"""Only registered classes with JSON-able frozen configs are saved; configs rebuild exactly."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from mfgtx.artifacts import (
    load_bundle,
    register_model,
    registered_models,
    save_bundle,
)
from mfgtx.artifacts._json import config_from_json, to_json
from mfgtx.nn import TransformerConfig


@dataclass(frozen=True)
class HeadConfig:
    encoder: TransformerConfig
    horizons: tuple[int, ...] = (1, 6)
    bands: tuple[tuple[float, float], ...] = ((0.1, 0.9),)
    scale: float | None = None


class Plain(nn.Module):
    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        self.config = config
        self.linear = nn.Linear(config.encoder.d_model, len(config.horizons))


def _config() -> HeadConfig:
    return HeadConfig(encoder=TransformerConfig(d_model=8, n_heads=2, d_ff=16))


def test_unregistered_model_is_refused_and_nothing_is_written(tmp_path) -> None:
    with pytest.raises(
        TypeError, match=r"Plain is not a registered model class; decorate it with @register_model"
    ):
        save_bundle(tmp_path / "b", Plain(_config()))
    assert list(tmp_path.iterdir()) == []


def test_nested_config_round_trips(tmp_path, clean_registry) -> None:
    register_model(Plain, name="tests.artifacts.Plain")
    model = Plain(_config())
    bundle = load_bundle(save_bundle(tmp_path / "b", model))
    assert bundle.config == model.config
    assert isinstance(bundle.config.encoder, TransformerConfig)
    assert bundle.config.bands == ((0.1, 0.9),)
    assert torch.equal(bundle.model.linear.weight, model.linear.weight)


def test_config_from_json_lists_become_tuples() -> None:
    data = to_json(_config(), "config")
    assert data["bands"] == [[0.1, 0.9]]
    assert config_from_json(HeadConfig, data) == _config()


@dataclass(frozen=True)
class BareTuple:
    sizes: tuple  # no default: only the annotation says it is a tuple
    names: list[str] | None = None


def test_config_from_json_bare_tuple_and_lists() -> None:
    config = BareTuple(sizes=(3, 4), names=["a"])
    assert config_from_json(BareTuple, to_json(config, "config")) == config


def test_config_from_json_names_unknown_and_missing_keys() -> None:
    data = to_json(_config(), "config")
    data["encoder"]["n_head"] = data["encoder"].pop("n_heads")
    with pytest.raises(
        ValueError,
        match=r"config\.encoder does not match TransformerConfig: unknown keys \['n_head'\], missing keys \['n_heads'\]",
    ):
        config_from_json(HeadConfig, data)


def test_config_validation_errors_are_kept() -> None:
    data = to_json(_config(), "config")
    data["encoder"]["n_heads"] = 3
    with pytest.raises(ValueError, match="d_model=8 is not divisible by n_heads=3"):
        config_from_json(HeadConfig, data)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ({"auroc": float("nan")}, ValueError, r"metrics\.auroc is nan: JSON has no NaN"),
        (
            {"per_class": {0: 0.5}},
            ValueError,
            r"metrics\.per_class has the key 0: JSON keys must be strings",
        ),
        (
            {"model": nn.Linear(1, 1)},
            TypeError,
            r"metrics\.model is a Linear, which has no JSON form",
        ),
        ([0.5], TypeError, "metrics must give a JSON object"),
    ],
)
def test_sections_must_be_strict_json(tmp_path, tiny_model, value, error, match) -> None:
    with pytest.raises(error, match=match):
        save_bundle(tmp_path / "b", tiny_model, metrics=value)
    assert list(tmp_path.iterdir()) == []


def test_scaler_must_have_sensor_scaler_state(tmp_path, tiny_model) -> None:
    with pytest.raises(ValueError, match=r"scaler\.to_dict\(\) is not a SensorScaler state"):
        save_bundle(tmp_path / "b", tiny_model, scaler={"mean": [0.0]})


@dataclass
class Loose:
    d: int = 2


class LooseModel(nn.Module):
    def __init__(self, config: Loose) -> None:
        super().__init__()
        self.config = config


class Unannotated(nn.Module):
    def __init__(self, config) -> None:
        super().__init__()
        self.config = config


@dataclass(frozen=True)
class WithSet:
    codes: frozenset[int] = frozenset({1})


class WithSetModel(nn.Module):
    def __init__(self, config: WithSet) -> None:
        super().__init__()
        self.config = config


@dataclass(frozen=True)
class WithPath:
    out: Path = Path("runs")


class WithPathModel(nn.Module):
    def __init__(self, config: WithPath) -> None:
        super().__init__()
        self.config = config


@pytest.mark.parametrize(("cls", "config"), [(LooseModel, Loose()), (Unannotated, _config())])
def test_config_must_be_the_annotated_frozen_dataclass(
    tmp_path, clean_registry, cls, config
) -> None:
    register_model(cls)
    with pytest.raises(
        TypeError,
        match=r"must be built as cls\(config\) with the argument annotated by its frozen config dataclass",
    ):
        save_bundle(tmp_path / "b", cls(config))
    assert list(tmp_path.iterdir()) == []


def test_config_fields_that_do_not_survive_json_are_refused(tmp_path, clean_registry) -> None:
    register_model(WithSetModel)
    with pytest.raises(
        TypeError, match=r"model\.config\.codes is a frozenset, which has no JSON form"
    ):
        save_bundle(tmp_path / "b", WithSetModel(WithSet()))
    register_model(WithPathModel)
    with pytest.raises(
        ValueError, match=r"config fields \['out'\] do not survive a JSON round trip"
    ):
        save_bundle(tmp_path / "b", WithPathModel(WithPath()))
    assert list(tmp_path.iterdir()) == []


def test_register_model_forms_and_conflicts(clean_registry) -> None:
    class A(nn.Module):
        pass

    with pytest.raises(ValueError, match="pass name=... for a class defined inside a function"):
        register_model(A)
    assert register_model(name="tests.artifacts.A")(A) is A
    assert register_model(A, name="tests.artifacts.A") is A  # again: no change
    assert registered_models()["tests.artifacts.A"] is A
    with pytest.raises(
        ValueError, match=r"is already registered as 'tests.artifacts.A', not 'other'"
    ):
        register_model(A, name="other")

    class B(nn.Module):
        pass

    with pytest.raises(
        ValueError, match=r"model name 'tests.artifacts.A' is already registered for"
    ):
        register_model(B, name="tests.artifacts.A")
    with pytest.raises(TypeError, match="register_model takes an nn.Module subclass"):
        register_model(int, name="tests.artifacts.int")


def test_redefined_class_replaces_its_old_registration(clean_registry) -> None:
    def define():
        class Reloaded(nn.Module):
            pass

        Reloaded.__qualname__ = "Reloaded"  # as if defined at module level, then reloaded
        return register_model(Reloaded)

    first, second = define(), define()
    assert first is not second
    assert registered_models()[f"{__name__}.Reloaded"] is second


@pytest.mark.slow
def test_a_fresh_process_loads_an_mfgtx_model_bundle_with_mfgtx_load(tmp_path) -> None:
    """mfgtx's own models register nothing at import: a fresh process loads their bundles
    through mfgtx.load, which names the model classes, and load_bundle alone refuses them."""
    import subprocess
    import sys

    from mfgtx.models import SensorEncoder, SensorEncoderConfig
    from tests.bundles import save

    save(
        tmp_path / "b",
        SensorEncoder(
            SensorEncoderConfig(n_channels=2, max_len=8, d_model=64, n_layers=3, d_ff=128)
        ),
    )
    code = (
        "import sys; from mfgtx.artifacts import load_bundle; from mfgtx.kinds import "
        "MODEL_CLASSES; print(type(load_bundle(sys.argv[1], classes=MODEL_CLASSES).model)"
        ".__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "b")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "SensorEncoder"
    bare = "import sys; from mfgtx.artifacts import load_bundle; load_bundle(sys.argv[1])"
    out = subprocess.run(
        [sys.executable, "-c", bare, str(tmp_path / "b")], capture_output=True, text=True
    )
    assert out.returncode != 0 and "load it with mfgtx.load()" in out.stderr
