"""Output columns in plant words (issue 37): ``p_bad``/``p_<class name>`` and ``decision`` as
a word, never ``p_0``/``p_1`` or 1/0; a sensor model's inputs named from its bundle."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mfgtx.calibration import Calibration, TemperatureScaler, ThresholdChoice
from mfgtx.data import ColumnMap, RegimePlan, Regimes, SensorScaler, Windowing, Windows
from mfgtx.kinds import SENSOR, VIT, SensorPredictor, SensorSpec, Trained, VitPredictor, VitSpec

CHOICE = ThresholdChoice(0.3, cost_missed_defect=5.0, cost_false_alarm=1.0, tp=8, fp=3, tn=40,
                         fn=1)  # fmt: skip


def _windows(values: np.ndarray, sensors: tuple[str, ...]) -> Windows:
    n = len(values) // 2
    t = np.zeros(n, "datetime64[ns]")
    return Windows(values=values.astype(np.float32), row_start=np.arange(n) * 2,
                   lot=np.array([f"L{i}" for i in range(n)]), start=t, end=t, label_time=t,
                   y=None, sensors=sensors, targets=(), window=2, stride=2, horizon=0)  # fmt: skip


def _sensor(n_outputs: int, calibration=None, regimes=None, scaler=None) -> SensorPredictor:
    w = _windows(np.arange(8.0).reshape(4, 2), ("temp", "flow"))
    spec = SensorSpec(
        columns=ColumnMap(lot="lot", time="t", targets="label", sensors=("temp", "flow")),
        windowing=Windowing(window=2), task="classification", targets=("label",),
        time_kind="utc", scaler=scaler or SensorScaler.fit(w, [0, 1]), regimes=regimes,
    )  # fmt: skip
    model = SimpleNamespace(config=SimpleNamespace(n_outputs=n_outputs))
    return SensorPredictor(SENSOR, Trained(model, calibration), spec)


def test_a_binary_lot_classifier_writes_p_bad_and_a_word() -> None:
    out = np.array([[0.0, 3.0], [2.0, -2.0], [np.nan, 0.0]])
    plain = _sensor(2).columns_of(out, None)
    assert list(plain) == ["p_bad", "decision"]
    assert plain["p_bad"][0] > 0.9 and np.isnan(plain["p_bad"][2])
    assert plain["decision"].tolist() == ["bad", "good", None]  # unscored: no decision
    flagged = _sensor(2, Calibration(TemperatureScaler(1.0), CHOICE)).columns_of(out, None)
    assert flagged["decision"].tolist() == ["bad", "good", None]


def test_a_multi_class_lot_classifier_names_classes_after_the_target() -> None:
    out = np.array([[0.0, 3.0, 0.0], [0.0, 0.0, 5.0]])
    cols = _sensor(3).columns_of(out, None)
    assert list(cols) == ["p_label_0", "p_label_1", "p_label_2", "decision"]
    assert cols["decision"].tolist() == ["label_1", "label_2"]


def test_a_vit_names_probabilities_after_its_classes_and_decides_in_words() -> None:
    spec = VitSpec(image_size=32, mode="L", min_size=8, mean=0.5, std=0.5,
                   class_names=("none", "scratch", "pit"), good_class="none")  # fmt: skip
    cal = Calibration(TemperatureScaler(1.0), CHOICE, good_class=0)
    model = SimpleNamespace(config=SimpleNamespace(num_classes=3))
    cols = VitPredictor(VIT, Trained(model, cal), spec).columns_of(
        np.array([[0.9, 0.05, 0.05], [0.2, 0.5, 0.3]])
    )
    assert [c for c in cols if c.startswith("p_")] == ["p_none", "p_scratch", "p_pit", "p_defect"]
    assert list(cols["decision"]) == ["good", "defect"]
    assert cols["p_defect"] == pytest.approx([0.1, 0.8])


def test_a_regimes_model_names_its_inputs_from_the_bundle() -> None:
    v = np.array([[1, 10.0], [1, 12.0], [2, 50.0], [2, 54.0]])
    w = _windows(v, ("grade", "temp"))
    regimes = Regimes.fit(w, [0, 1], RegimePlan(column="grade"))
    scaler = SensorScaler.fit(regimes.apply(w), [0, 1])
    assert _sensor(2, regimes=regimes, scaler=scaler).channel_names == (
        "temp", "regime 1", "regime 2",
    )  # fmt: skip
    assert _sensor(2).channel_names == ("temp", "flow")
