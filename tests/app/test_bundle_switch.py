"""Switching bundles is fast and starts clean: the models folder is verified once per change
of its files (never served stale when a bundle is replaced), and what the user picked for
one bundle (lot, window, what-if threshold, images, attention option) is cleared when
another bundle is shown (issue 37)."""

from __future__ import annotations

import ast
import dataclasses
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from .conftest import MAIN, SAMPLE

APP = MAIN.parent


@pytest.fixture
def two_bundles(app_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A models folder with the tiny quality bundle twice, as ``quality_a`` and ``quality_b``."""
    models = tmp_path / "models"
    for name in ("quality_a", "quality_b"):
        shutil.copytree(app_env / "sample_quality", models / name)
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(models))
    return models


@pytest.fixture
def bundles_module(monkeypatch: pytest.MonkeyPatch):
    """The app's ``_bundles`` module, as the pages import it (from ``app/``)."""
    monkeypatch.syspath_prepend(str(APP))
    import _bundles

    return _bundles


def _quality(bundle: str) -> AppTest:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page("views/quality.py").run()
    at.selectbox(key="quality_bundle").set_value(bundle).run()
    assert not at.exception, at.exception
    return at


def test_a_lot_and_threshold_picked_for_one_bundle_are_cleared_when_another_is_shown(
    two_bundles: Path,
) -> None:
    at = _quality("quality_a")
    lots = at.selectbox(key="quality_lot").options
    default = at.slider(key="quality_threshold").value
    assert len(lots) > 1 and lots[0] == at.selectbox(key="quality_lot").value
    at.selectbox(key="quality_lot").set_value(lots[-1]).run()
    at.slider(key="quality_threshold").set_value(0.93).run()
    at.run()  # a rerun of the same bundle keeps what was picked
    assert at.selectbox(key="quality_lot").value == lots[-1]
    assert at.slider(key="quality_threshold").value == pytest.approx(0.93)

    at.selectbox(key="quality_bundle").set_value("quality_b").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="quality_lot").value == lots[0]  # B's default, not A's pick
    assert at.slider(key="quality_threshold").value == pytest.approx(default)
    assert f"Sensors of lot {lots[-1]}" not in str([c.proto.spec for c in at.get("plotly_chart")])

    at.selectbox(key="quality_lot").set_value(lots[1]).run()
    at.selectbox(key="quality_bundle").set_value("quality_a").run()  # and back: cleared again
    assert at.selectbox(key="quality_lot").value == lots[0]


def _owned(page: str) -> set[str]:
    """The session-state keys a page passes to ``pick_bundle(..., owns=...)`` (a tuple, or
    a module-level tuple it names)."""
    tree = ast.parse((APP / "views" / page).read_text(encoding="utf-8"))
    consts = {
        t.id: n.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "pick_bundle":
            owns = next((k.value for k in call.keywords if k.arg == "owns"), None)
            if isinstance(owns, ast.Name):
                owns = consts[owns.id]
            return set(ast.literal_eval(owns)) if owns is not None else set()
    raise AssertionError(f"{page} calls no pick_bundle")


@pytest.mark.parametrize(
    ("page", "keys"),
    [
        ("defects.py", {"defect_samples", "defect_map"}),
        ("quality.py", {"quality_line", "quality_lot", "quality_as_of", "quality_threshold"}),
        (
            "forecast.py",
            {"forecast_lot", "forecast_sensors", "forecast_horizon", "forecast_origin"},
        ),
        ("evaluation.py", {"eval_threshold"}),
        ("score.py", {"score_done"}),
    ],
)
def test_every_page_clears_the_picks_of_its_bundle(page: str, keys: set[str]) -> None:
    """Each page names what belongs to its bundle (a page that forgets one fails here; the
    AppTests above and below show what clearing does)."""
    assert keys <= _owned(page)


def test_the_folder_is_verified_once_per_change_of_its_files_never_stale(
    two_bundles: Path, bundles_module, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = bundles_module._find_bundles

    def counted(models_dir):
        calls.append(models_dir)
        return real(models_dir)

    monkeypatch.setattr(bundles_module, "_find_bundles", counted)
    bundles_module._verified.clear()
    found, problems = bundles_module.find_bundles(two_bundles)
    again, _ = bundles_module.find_bundles(two_bundles)
    assert [b.path.name for b in found] == ["quality_a", "quality_b"] and not problems
    assert len(calls) == 1 and [b.bundle_id for b in again] == [b.bundle_id for b in found]

    # the weights of B replaced in place: same size, same modification time (a copy that
    # keeps times); only the change time tells, and it is enough
    weights = two_bundles / "quality_b" / "weights.safetensors"
    before = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    found, problems = bundles_module.find_bundles(two_bundles)
    assert len(calls) == 2
    assert [b.path.name for b in found] == ["quality_a"]
    assert len(problems) == 1 and "quality_b" in problems[0]
    sys.modules.pop("_bundles", None)


@pytest.mark.slow
def test_images_picked_for_the_defect_model_are_not_scored_by_the_photo_model(
    demo_env: dict,
) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=300).run()
    at.switch_page("views/defects.py").run()
    at.selectbox(key="defect_bundle").set_value("sample_defects").run()
    at.multiselect(key="defect_samples").set_value(["defects/images/000.png"]).run()
    at.radio(key="defect_map").set_value("layer").run()
    assert any("Most likely class" in m.value for m in at.markdown)

    at.selectbox(key="defect_bundle").set_value("sample_inspection").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="defect_samples").value == []
    assert at.radio(key="defect_map").value == "rollout"
    assert not any("Most likely class" in m.value for m in at.markdown)  # nothing scored


@pytest.mark.slow
@pytest.mark.parametrize("bundle", ["sample_defects", "sample_inspection"])
def test_the_deletion_test_of_another_map_kind_is_what_explain_gives(
    demo: dict, bundle: str
) -> None:
    """The map option reruns only the deletion test, on the input the maps read (for a
    photo: the worst tile, its tiles not scored again), and it equals ``explain``'s."""
    import mfgtx

    predictor = mfgtx.load(str(demo["out"] / "models" / bundle))
    name = (
        "inspection/images/P01.png" if bundle == "sample_inspection" else "defects/images/000.png"
    )
    data = (SAMPLE / name).read_bytes()
    explained = predictor.explain((name, data), deletion=False)
    assert explained.deletion is None and explained.inputs is not None
    for which in ("rollout", "layer"):
        full = predictor.explain((name, data), which=which)
        again = predictor.deletion_of(explained, which)
        for field in dataclasses.fields(again):
            mine, theirs = getattr(again, field.name), getattr(full.deletion, field.name)
            if isinstance(mine, str):
                assert mine == theirs, field.name
            else:
                np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), err_msg=field.name)
        assert full.row == explained.row


@pytest.mark.slow
def test_moving_the_map_option_explains_no_image_again(
    demo_env: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mfgtx.kinds.vit.predictor import VitPredictor

    at = AppTest.from_file(str(MAIN), default_timeout=300).run()
    at.switch_page("views/defects.py").run()
    at.selectbox(key="defect_bundle").set_value("sample_inspection").run()
    at.multiselect(key="defect_samples").set_value(["inspection/images/P01.png"]).run()
    assert not at.exception, at.exception
    calls = []
    real = VitPredictor.explain
    monkeypatch.setattr(
        VitPredictor, "explain", lambda self, *a, **k: calls.append(a) or real(self, *a, **k)
    )
    monkeypatch.setattr(VitPredictor, "score", lambda *a, **k: calls.append(a) or None)
    at.radio(key="defect_map").set_value("layer").run()
    assert not at.exception, at.exception
    assert calls == []  # the row, maps and tiles were kept; only the deletion test ran
    assert any("Most likely class" in m.value for m in at.markdown)
