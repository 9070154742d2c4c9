"""Bundles written by main 66eb24c load with the current code and score as they did then.

The bundles, their inputs and the scores 66eb24c gave are in ``tests/fixtures/bundles_66eb24c``
(its README says how they were made). Each bundle is loaded with :func:`mfgtx.load`; its
output rows (as ``mfgtx score`` writes them, under today's column names: ``p_bad`` and
``decision`` as words, see ``_named``) and its model's raw outputs on fixed inputs, through
every public forward path, must equal the old ones to 1e-6.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bundles_66eb24c"
TOL = 1e-6


def _named(name: str, old_rows: pd.DataFrame) -> pd.DataFrame:
    """The old rows under today's names: ``p_<class name>`` for ``p_<k>`` (a binary sensor
    classifier: ``p_bad`` for ``p_1``, ``p_0`` = 1 - ``p_bad`` no longer written) and
    ``decision`` as words; the values are the old ones."""
    import json

    if "decision" not in old_rows:
        return old_rows
    rows = old_rows.copy()
    if name == "sensor":
        assert (rows["p_0"] + rows["p_1"]).sub(1).abs().max() < TOL
        rows = rows.drop(columns="p_0").rename(columns={"p_1": "p_bad"})
        words = {1: "bad", 0: "good", -1: None}
    else:
        spec = json.loads((FIXTURE / name / "manifest.json").read_text())["input_spec"]
        names = {f"p_{k}": f"p_{c}" for k, c in enumerate(spec["class_names"])}
        rows = rows.rename(columns=names)
        words = {1: "defect", 0: "good"}
    rows["decision"] = rows["decision"].map(words).astype(object)
    return rows


def _scoring():
    spec = importlib.util.spec_from_file_location("score_66eb24c", FIXTURE / "score_66eb24c.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["sensor", "forecast_direct", "forecast_ar", "vit"])
def test_old_bundle_scores_as_it_did(name: str) -> None:
    rows, tensors = _scoring().score(name)
    old_rows = _named(name, pd.read_parquet(FIXTURE / "scores" / f"{name}.parquet"))
    assert len(old_rows) > 0
    # the lot's key columns (its line) came beside ``lot`` later: one value per lot
    added = [c for c in rows.columns if c not in old_rows.columns]
    assert all(rows.groupby("lot")[c].nunique().eq(1).all() for c in added)
    rows = rows.drop(columns=added)
    pd.testing.assert_frame_equal(
        rows.reset_index(drop=True), old_rows, check_dtype=False, rtol=TOL, atol=TOL
    )
    old = load_file(str(FIXTURE / "scores" / f"{name}.safetensors"))
    assert sorted(tensors) == sorted(old)
    for key, value in old.items():
        torch.testing.assert_close(tensors[key], value, rtol=TOL, atol=TOL, msg=f"{name}: {key}")


def test_fixture_bundles_are_the_old_layout() -> None:
    """The fixture holds what 66eb24c wrote, not bundles rewritten by a later version."""
    import json

    for name in ("sensor", "forecast_direct", "forecast_ar", "vit"):
        manifest = json.loads((FIXTURE / name / "manifest.json").read_text())
        assert manifest["kind"] == name.split("_")[0]
        assert (FIXTURE / name / "weights.safetensors").is_file()
