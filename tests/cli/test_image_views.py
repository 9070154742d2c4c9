"""``images.views`` on whole images: each image scored as the mean over its flips, the
threshold chosen on validation scores taken the same way, every output path the same."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mfgtx
from mfgtx.cli import main
from mfgtx.jobs import load_config
from tests.cli.conftest import write_job
from tests.cli.test_jobs_forecast_vit import _patch, vit_job

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def viewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-class image folder and a ViT trained on it with ``images.views: 4``; its job."""
    root = tmp_path_factory.mktemp("views")
    rng = np.random.default_rng(1)
    for kind in ("none", "scratch"):
        (root / "images" / kind).mkdir(parents=True)
        for i in range(24):
            _patch(kind, rng).save(root / "images" / kind / f"{i:03d}.png")
    job = vit_job(root / "images", root)
    job["images"]["views"] = 4
    path = write_job(root / "vit.yaml", job)
    assert main(["train", "vit", str(path)]) == 0
    return path


def _flipped(data: bytes) -> bytes:
    buf = io.BytesIO()
    Image.open(io.BytesIO(data)).transpose(Image.Transpose.FLIP_TOP_BOTTOM).save(buf, "PNG")
    return buf.getvalue()


def test_a_flipped_image_scores_as_the_image_with_views_and_not_without(viewed) -> None:
    from mfgtx.kinds.vit import VIT, VitPredictor

    config = load_config(viewed)
    predictor = mfgtx.load(str(config.bundle))
    assert predictor.input_spec.views == 4
    one = VitPredictor(VIT, predictor.bundle, replace(predictor.input_spec, views=1))
    data = (Path(config.images.path) / "scratch" / "003.png").read_bytes()
    pair = [("a.png", data), ("flipped.png", _flipped(data))]
    for p, same in ((predictor, True), (one, False)):
        rows = p.score(pair).rows.set_index("image")
        a, b = (
            rows.loc["a.png", ["p_none", "p_scratch"]],
            rows.loc["flipped.png", ["p_none", "p_scratch"]],
        )
        assert np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=0, atol=1e-6) is same
    # explain writes the row score writes (over the views)
    row = predictor.score(pair[:1]).rows.iloc[0]
    explained = predictor.explain(pair[0], deletion=False).row
    assert explained["p_defect"] == pytest.approx(row["p_defect"], abs=1e-9)
    assert explained["decision"] == row["decision"]


def test_the_threshold_is_chosen_on_validation_scores_over_the_views(viewed) -> None:
    from mfgtx.calibration import choose_threshold
    from mfgtx.kinds.vit import prepare_images

    config = load_config(viewed)
    predictor = mfgtx.load(str(config.bundle))
    cal = predictor.calibration
    prep = prepare_images(config.images, config.split, seed=config.train.seed)
    p = cal.defect_of(predictor.probabilities(prep.images[prep.val]))
    y = (prep.labels[prep.val] != cal.good_class).astype(int)
    again = choose_threshold(p, y, cost_missed_defect=cal.threshold.cost_missed_defect)
    assert cal.threshold.threshold == pytest.approx(again.threshold)
    assert (cal.threshold.tp, cal.threshold.fp) == (again.tp, again.fp)


def test_bench_and_the_report_figures_use_the_views(viewed, capsys) -> None:
    from tests.cli.conftest import summary

    assert main(["bench", str(viewed), "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert summary(out)["views"] == 4 and "each in 4 views" in out
    assert main(["evaluate", str(viewed)]) == 0
    judged = summary(capsys.readouterr().out)
    saved = mfgtx.load(str(load_config(viewed).bundle)).report
    assert judged["metrics"]["f1"] == pytest.approx(saved.rows[0].metrics["f1"])


def test_scoring_whole_images_holds_one_full_size_photo_at_a_time(viewed, tmp_path) -> None:
    import tracemalloc

    predictor = mfgtx.load(str(load_config(viewed).bundle))
    rng = np.random.default_rng(0)
    decoded = 0
    for i in range(24):  # 24 photos of 300 x 400 px in one scoring batch: 2.9 MB decoded
        photo = rng.integers(0, 256, (300, 400), dtype=np.uint8)
        Image.fromarray(photo).save(tmp_path / f"{i:02d}.png", compress_level=0)
        decoded += photo.nbytes
    predictor.score(tmp_path)  # imports and caches warmed up
    tracemalloc.start()
    scored = predictor.score(tmp_path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(scored.rows) == 24 and not scored.errors
    assert peak < decoded / 4  # a photo or two, not the batch's files and decoded photos
