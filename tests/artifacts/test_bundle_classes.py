"""A bundle names its model class; load_bundle rebuilds only the classes its caller passes.

Only models built from a JSON-able frozen config are saved, and configs rebuild exactly.
There is no global registry: nothing a program saved or imported is remembered by the loader.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

import mfgtx.artifacts
from mfgtx.artifacts import BundleError, load_bundle, save_bundle, verify_bundle
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


def test_the_default_name_is_module_and_qualified_name(tmp_path) -> None:
    path = save_bundle(tmp_path / "b", Plain(_config()))
    assert verify_bundle(path)["manifest"]["model"]["class"] == f"{__name__}.Plain"
    assert type(load_bundle(path, classes=[Plain]).model) is Plain  # keyed by default name
    assert type(load_bundle(path, classes={f"{__name__}.Plain": Plain}).model) is Plain


def test_model_name_is_what_the_loader_is_given_back(tmp_path) -> None:
    path = save_bundle(tmp_path / "b", Plain(_config()), model_name="plant.Head")
    assert verify_bundle(path)["manifest"]["model"]["class"] == "plant.Head"
    assert type(load_bundle(path, classes={"plant.Head": Plain}).model) is Plain
    with pytest.raises(BundleError, match=r"model class 'plant\.Head' is not known") as info:
        load_bundle(path, classes=[Plain])  # its default name is not the one saved
    assert "pass classes={'plant.Head': YourModel} to load_bundle" in str(info.value)
    assert f"Known: ['{__name__}.Plain']" in str(info.value)


def test_nothing_is_remembered_between_saving_and_loading(tmp_path) -> None:
    """No global registry: a class saved (or imported) is not known to a later load."""
    path = save_bundle(tmp_path / "b", Plain(_config()))
    with pytest.raises(BundleError, match=r"pass classes=\{'[\w.]+Plain': YourModel\}"):
        load_bundle(path)
    assert not hasattr(mfgtx.artifacts, "register_model")
    assert not hasattr(mfgtx.artifacts, "registered_models")


def test_a_class_defined_in_a_function_needs_a_name(tmp_path) -> None:
    class Local(Plain):
        pass

    with pytest.raises(ValueError, match=r"without '<locals>'.*pass model_name=\.\.\. for a class"):
        save_bundle(tmp_path / "b", Local(_config()))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="non-empty string"):
        save_bundle(tmp_path / "b", Local(_config()), model_name=" ")
    path = save_bundle(tmp_path / "b", Local(_config()), model_name="tests.Local")
    assert type(load_bundle(path, classes={"tests.Local": Local}).model) is Local
    with pytest.raises(ValueError, match=r"defined inside a function.*pass classes=\{"):
        load_bundle(path, classes=[Local])


@pytest.mark.parametrize(
    ("classes", "match"),
    [
        ("tests.Plain", "found the text 'tests.Plain'"),
        ([int], "a model class must be an nn.Module subclass, found <class 'int'>"),
        ({"tests.Plain": "Plain"}, "a model class must be an nn.Module subclass"),
        ({1: Plain}, "a model class name must be text, found 1"),
    ],
)
def test_classes_must_be_named_model_classes(tmp_path, classes, match) -> None:
    path = save_bundle(tmp_path / "b", Plain(_config()))
    with pytest.raises(TypeError, match=match):
        load_bundle(path, classes=classes)


def test_only_modules_are_saved(tmp_path) -> None:
    with pytest.raises(TypeError, match="save_bundle takes an nn.Module, found HeadConfig"):
        save_bundle(tmp_path / "b", _config())
    assert list(tmp_path.iterdir()) == []


def test_nested_config_round_trips(tmp_path) -> None:
    model = Plain(_config())
    bundle = load_bundle(save_bundle(tmp_path / "b", model), classes=[Plain])
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
def test_config_must_be_the_annotated_frozen_dataclass(tmp_path, cls, config) -> None:
    with pytest.raises(
        TypeError,
        match=r"must be built as cls\(config\) with the argument annotated by its frozen config dataclass",
    ):
        save_bundle(tmp_path / "b", cls(config))
    assert list(tmp_path.iterdir()) == []


def test_config_fields_that_do_not_survive_json_are_refused(tmp_path) -> None:
    with pytest.raises(
        TypeError, match=r"model\.config\.codes is a frozenset, which has no JSON form"
    ):
        save_bundle(tmp_path / "b", WithSetModel(WithSet()))
    with pytest.raises(
        ValueError, match=r"config fields \['out'\] do not survive a JSON round trip"
    ):
        save_bundle(tmp_path / "b", WithPathModel(WithPath()))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_fresh_process_loads_an_mfgtx_model_bundle_with_mfgtx_load(tmp_path) -> None:
    """mfgtx's own models register nothing at import: a fresh process loads their bundles
    with the kinds' classes (what mfgtx.load passes), and load_bundle alone refuses them."""
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
