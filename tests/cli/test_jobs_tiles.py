"""``train vit`` on full-size photos: tiles from PNG or labelme masks, split by photo or lot,
a photo scored by its worst tile, per-photo and per-tile rows, and the errors of bad masks."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import mfgtx
from mfgtx.cli import main
from mfgtx.jobs import ConfigError, load_config
from mfgtx.kinds import VitSpec
from mfgtx.kinds.vit import ImagesSection
from mfgtx.kinds.vit.tiles import TilesSection, prepare_tiles
from mfgtx.split import SplitPlan
from tests.cli.conftest import SAMPLE, write_job

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow

SIZE = 32  # tile side
H, W = 64, 224  # photo: 2 x 7 tiles


def _photo(rng: np.random.Generator, pit: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """A grey strip photo and its mask; ``pit`` = (row, col) of a dark 6 x 6 pit."""
    x = rng.normal(120, 8, (H, W))
    mask = np.zeros((H, W), np.uint8)
    if pit is not None:
        r, c = pit
        x[r : r + 6, c : c + 6] -= 70
        mask[r : r + 6, c : c + 6] = 1
    return np.clip(x, 0, 255).astype(np.uint8), mask


def _labelme(mask: np.ndarray, name: str) -> dict:
    rows, cols = np.nonzero(mask)
    shapes = []
    if rows.size:  # one rectangle through the corner pixels fills exactly the pit
        corners = [[int(cols.min()), int(rows.min())], [int(cols.max()), int(rows.max())]]
        shapes.append({"label": "pit", "shape_type": "rectangle", "points": corners})
    return {"imagePath": name, "imageData": None, "imageHeight": H, "imageWidth": W,
            "shapes": shapes}  # fmt: skip


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 photos of 6 coils (one pitted, one clean each) with PNG masks, labelme files and a
    manifest with lots; photo 0's pit sits on a tile corner (a sliver in one tile)."""
    root = tmp_path_factory.mktemp("inspection")
    (root / "images").mkdir()
    (root / "masks").mkdir()
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        pit = None
        if i % 2 == 0:
            pit = (29, 29) if i == 0 else (int(rng.integers(4, 20)), int(rng.integers(36, 56)))
        img, mask = _photo(rng, pit)
        name = f"P{i:02d}.png"
        Image.fromarray(img).save(root / "images" / name)
        Image.fromarray(mask * 255).save(root / "masks" / name)
        (root / "images" / f"P{i:02d}.json").write_text(json.dumps(_labelme(mask, name)))
        t = pd.Timestamp("2026-03-09T06:00:00Z") + pd.Timedelta(hours=6 * (i // 2), minutes=i % 2)
        rows.append({"path": f"images/{name}", "lot": f"K{i // 2}", "timestamp": t.isoformat()})
    pd.DataFrame(rows).to_csv(root / "manifest.csv", index=False)
    return root


def tiles_job(photos: Path, out: Path, masks: dict | None = None, **sections: object) -> dict:
    job = {
        "images": {
            "path": str(photos / "manifest.csv"),
            "image_size": SIZE,
            "tiles": {"size": SIZE, "stride": SIZE},
            "masks": masks or {"format": "labelme", "min_defect_px": 10},
        },
        "split": {"test_size": 0.25, "val_size": 0.25},
        "vit": {"patch_size": 8, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32},
        "train": {"epochs": 2, "batch_size": 16, "patience": None, "progress": "log"},
        "calibration": {"cost_ratio": 5},
        "bundle": str(out / "models" / "tiles"),
        "score": {"output": {"path": str(out / "photos.csv")}},
    }
    job.update(sections)
    return job


def _images(photos: Path, **masks: object) -> ImagesSection:
    cfg = load_config(None, base=tiles_job(photos, photos, masks={"min_defect_px": 10, **masks}))
    assert cfg.images is not None
    return cfg.images


PLAN = SplitPlan(test_size=0.25, val_size=0.25)


def test_png_and_labelme_masks_give_the_same_tile_labels(photos) -> None:
    png = prepare_tiles(_images(photos, format="png", path=str(photos / "masks")), PLAN)
    labelme = prepare_tiles(_images(photos, format="labelme"), PLAN)
    pd.testing.assert_frame_equal(png.tiles, labelme.tiles)
    t = png.tiles
    assert len(t) == 12 * 14 and list(png.image_labels) == [1, 0] * 6
    # photo 0: a 6 x 6 pit on a tile corner -> 3 x 3, 3 x 3, 3 x 3 and 3 x 3 pixels: ambiguous
    first = t[t["photo"] == 0]
    assert first["defect_px"].tolist() == [9, 9, 0, 0, 0, 0, 0, 9, 9, 0, 0, 0, 0, 0]
    assert (first["label"] == -1).sum() == 4 and png.image_labels[0] == 1
    # every other pitted photo: its whole pit (36 px) lands in one or two tiles >= 8 px
    assert (t["label"] == 1).sum() >= 5 and png.counts["ambiguous_tiles"] >= 4


def test_the_sample_photos_tile_as_their_readme_says() -> None:
    cfg = load_config(Path("pipelines/configs/sample_inspection.yaml"))
    plan = cfg.split
    touching = replace(cfg.images, tiles=TilesSection(64))  # the README's tiling
    labelme = prepare_tiles(touching, plan)
    png_images = replace(
        touching,
        masks=replace(cfg.images.masks, format="png", path=str(SAMPLE / "inspection/masks")),
    )
    png = prepare_tiles(png_images, plan)
    pd.testing.assert_frame_equal(png.tiles, labelme.tiles)
    labels = labelme.tiles["label"]
    assert len(labels) == 1440 and (labels == 1).sum() == 15 and (labels == -1).sum() == 2
    assert int(labelme.image_labels.sum()) == 5
    # the job's own: half-overlapping tiles (28 x 11 a photo), training tiles 24 px apart
    job = prepare_tiles(cfg.images, plan)
    labels = job.tiles["label"]
    assert len(labels) == 16 * 28 * 11 and (labels == 1).sum() == 51 and (labels == -1).sum() == 4
    assert job.fit_tiles is not None and len(job.fit_tiles) == 16 * 36 * 14


def test_no_photo_and_no_lot_straddles_two_sets(photos) -> None:
    prep = prepare_tiles(_images(photos, format="labelme"), PLAN)
    sets = {}
    for name in ("train", "val", "test"):
        rows = prep.tiles_of(getattr(prep, name))
        sets[name] = set(prep.tiles["photo"].to_numpy()[rows].tolist())
    assert not (sets["train"] & sets["test"]) and not (sets["train"] & sets["val"])
    assert not (sets["val"] & sets["test"])
    lot = {k: f"K{int(k[8:10]) // 2}" for k in prep.keys}
    lots = {n: {lot[prep.keys[p]] for p in s} for n, s in sets.items()}
    assert not (lots["train"] & lots["test"]) and not (lots["val"] & lots["test"])
    report = prep.audit_report()
    assert report.passed and "photos_in_one_set" in [c.name for c in report.checks]
    # the check looks at the tiles: a photo in two sets fails it
    leaky = replace(prep, train=np.append(prep.train, prep.test[0]))
    failed = leaky.audit_report()
    assert not failed.passed and "photos_in_one_set" in failed.failed


def test_without_lots_each_photo_is_its_own_group(photos, tmp_path) -> None:
    frame = pd.read_csv(photos / "manifest.csv")[["path"]]
    frame.to_csv(photos / "no_lots.csv", index=False)
    images = replace(_images(photos, format="labelme"), path=str(photos / "no_lots.csv"))
    prep = prepare_tiles(images, PLAN)
    assert prep.split.method == "stratified" and len(set(prep.groups.tolist())) == 12
    assert prep.audit_report().passed


@pytest.fixture(scope="module")
def trained(photos, tmp_path_factory) -> dict:
    """A tiny tiled bundle trained through ``mfgtx train vit``, scored per photo and per tile."""
    out = tmp_path_factory.mktemp("tiles_run")
    views = {"images": {**tiles_job(photos, out)["images"], "views": 4}}
    job = write_job(out / "tiles.yaml", tiles_job(photos, out, **views))
    per_tile = tiles_job(photos, out, **views)
    per_tile["score"] = {"per_tile": True, "output": {"path": str(out / "tiles.csv")}}
    tile_job = write_job(out / "per_tile.yaml", per_tile)
    seen: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("mfgtx.kinds")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        assert main(["train", "vit", str(job)]) == 0
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert main(["score", str(job)]) == 0
    assert main(["score", str(tile_job)]) == 0
    return {"job": job, "out": out, "photos": photos, "log": seen}


def test_train_writes_a_tiled_bundle_judged_per_photo_and_per_tile(trained) -> None:
    config = load_config(trained["job"])
    predictor = mfgtx.load(str(config.bundle))
    spec = predictor.input_spec
    assert spec.tiled and (spec.tile_size, spec.tile_stride) == (SIZE, SIZE)
    assert spec.views == 4  # images.views, kept in the bundle
    assert spec.class_names == ("good", "defect") and spec.good_class == "good"
    report, tiles = predictor.report, predictor.tile_report
    for r, unit in ((report, "photos"), (tiles, "tiles")):
        assert r.unit == unit and r.primary == "average_precision"
        assert [row.name for row in r.rows] == [
            "DefectViT", "MajorityClass", "HOG + logistic regression"
        ]  # fmt: skip
        assert set(r.metrics) == {"roc_auc", "average_precision", "recall", "false_alarm_rate"}
    for r in (report, tiles):  # the report says how tiles were scored, baselines included
        assert any(
            "The model scores every tile as the mean of 4 views (as cut and flipped); the "
            "baselines, fitted without flips, score tiles as cut" in n
            for n in r.notes
        )
    manifest = predictor.bundle.manifest
    assert manifest["audit"]["passed"]
    assert "photos_in_one_set" in [c["name"] for c in manifest["audit"]["checks"]]
    assert manifest["split"]["balancing"] == "sampler"  # pits are rare among the tiles
    errors = pd.read_csv(f"{config.bundle}.errors.csv")
    assert len(errors) == 0  # every photo and mask was usable


def test_a_photo_scores_its_worst_tile(trained) -> None:
    out = trained["out"]
    photos = pd.read_csv(out / "photos.csv")
    tiles = pd.read_csv(out / "tiles.csv")
    assert len(photos) == 12 and len(tiles) == 12 * 14
    assert list(photos.columns[:5]) == ["image", "bundle_id", "top", "left", "tiles"]
    assert {"p_defect", "decision", "predicted_class"} <= set(photos.columns)
    assert (photos["tiles"] == 14).all()
    for _, row in photos.iterrows():
        mine = tiles[tiles["image"] == row["image"]]
        worst = mine.loc[mine["p_defect"].idxmax()]
        assert row["p_defect"] == pytest.approx(mine["p_defect"].max(), abs=1e-12)
        assert (row["top"], row["left"]) == (worst["top"], worst["left"])
        assert row["decision"] == worst["decision"]


def test_load_predict_equals_the_rows_score_wrote(trained) -> None:
    config = load_config(trained["job"])
    predictor = mfgtx.load(str(config.bundle))
    out = trained["out"]
    for per_tile, file in ((False, "photos.csv"), (True, "tiles.csv")):
        written = pd.read_csv(out / file)
        rows = predictor.predict(config.score.images or config.images.path, per_tile=per_tile)
        assert list(rows.columns) == list(written.columns)
        pd.testing.assert_frame_equal(
            rows.reset_index(drop=True), written, check_dtype=False, atol=1e-9
        )
    # explain reads the same worst tile
    photo = trained["photos"] / "images" / "P02.png"
    explained = predictor.explain(("images/P02.png", photo.read_bytes()), deletion=False)
    row = pd.read_csv(out / "photos.csv").set_index("image").loc["images/P02.png"]
    assert (explained.row["top"], explained.row["left"]) == (row["top"], row["left"])
    assert explained.image.shape == (SIZE, SIZE)


def test_a_photo_smaller_than_a_tile_is_an_error_row(trained, tmp_path) -> None:
    predictor = mfgtx.load(str(load_config(trained["job"]).bundle))
    buf = tmp_path / "tiny.png"
    Image.new("L", (20, 20), 100).save(buf)
    good = (trained["photos"] / "images" / "P01.png").read_bytes()
    scored = predictor.score([("tiny.png", buf.read_bytes()), ("P01.png", good)])
    assert scored.rows["image"].tolist() == ["P01.png"]
    (err,) = scored.errors
    assert err["file"] == "tiny.png" and "smaller than one 32x32 tile" in err["reason"]


def test_a_bad_mask_or_labelme_file_is_an_errors_file_row(photos, tmp_path, capsys) -> None:
    bad = tmp_path / "photos"
    bad.mkdir()
    for p in photos.rglob("*"):
        if p.is_file():
            target = bad / p.relative_to(photos)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(p.read_bytes())
    (bad / "images" / "P03.json").write_text('{"imageHeight": 64, "imageWidth": 224, "shapes": [')
    (bad / "masks" / "P05.png").write_bytes(b"not a png")
    for fmt, broken in (("labelme", "images/P03.json"), ("png", "masks/P05.png")):
        masks = {"format": fmt, "min_defect_px": 10}
        if fmt == "png":
            masks["path"] = str(bad / "masks")
        job = write_job(tmp_path / f"{fmt}.yaml", tiles_job(bad, tmp_path / fmt, masks=masks))
        assert main(["train", "vit", str(job)]) == 0
        capsys.readouterr()
        errors = pd.read_csv(tmp_path / fmt / "models" / "tiles.errors.csv")
        assert errors["file"].tolist() == [str(bad / broken)], fmt
        assert "photo left out" in errors["reason"][0] and "P0" in errors["reason"][0]
        assert errors["lot"].tolist() == ["K1" if fmt == "labelme" else "K2"]


@pytest.mark.parametrize(
    ("images", "message"),
    [
        ({"masks": {"format": "labelme"}}, "tiles and masks go together"),
        ({"tiles": {"size": 32}}, "tiles and masks go together"),
        ({"tiles": {"size": 32, "strid": 16}, "masks": {"format": "labelme"}},
         "images.tiles.strid: unknown key; did you mean 'stride'?"),
        ({"tiles": {"size": 32, "stride": 40}, "masks": {"format": "labelme"}},
         "stride must be a whole number of pixels from 1 to size=32"),
        ({"tiles": {"size": 32, "train_stride": 40}, "masks": {"format": "labelme"}},
         "train_stride: stride must be a whole number of pixels from 1 to size=32"),
        ({"tiles": {"size": 32, "balance": "both"}, "masks": {"format": "labelme"}},
         "must be one of ['sampler', 'weights']"),
        ({"tiles": {"size": 32}, "masks": {"format": "labelme"}, "views": 2},
         "views must be 1 (as read), 4 (and flipped) or 8 (and turned a quarter), found 2"),
        ({"tiles": {"size": 32}, "masks": {"format": "labelme"}, "views": 8},
         "views=8 turns each image a quarter, which this model never saw in training"),
        ({"tiles": {"size": 32}, "masks": {"format": "labelme"}, "views": 4, "augment": False},
         "views=4: flipped views are only read well by a model that trained on flips"),
        ({"tiles": {"size": 32}, "masks": {"format": "png"}}, "PNG masks need their own folder"),
        ({"tiles": {"size": 32}, "masks": {"format": "jpg"}}, "must be one of ['png', 'labelme']"),
        ({"tiles": {"size": 8}, "masks": {"format": "labelme", "min_defect_px": 65}},
         "min_defect_px=65 is more pixels than a 8x8 tile holds"),
        ({"tiles": {"size": 32}, "masks": {"format": "labelme"}, "good_class": "none"},
         "a tiled job's classes are ['good', 'defect']"),
    ],
)  # fmt: skip
def test_config_errors_name_the_key(images, message) -> None:
    job = {"images": {"path": "photos/manifest.csv", **images}}
    with pytest.raises(ConfigError) as e:
        load_config(None, base=job)
    assert message in str(e.value) and "images" in str(e.value)


def test_per_tile_is_refused_for_a_whole_image_bundle(trained) -> None:
    from mfgtx.kinds.vit import VIT, VitPredictor

    tiled = mfgtx.load(str(load_config(trained["job"]).bundle))
    whole = VitPredictor(VIT, tiled.bundle, replace(tiled.input_spec, tile_size=None))
    with pytest.raises(ValueError, match="per_tile: this bundle reads whole images"):
        whole.score([], per_tile=True)


def test_the_input_spec_reads_versions_1_and_2_and_writes_3_only_with_views() -> None:
    old = {"kind": "vit", "version": 1, "image_size": 64, "mode": "L", "min_size": 8,
           "mean": 0.5, "std": 0.5, "class_names": ["none", "pit"], "good_class": "none"}  # fmt: skip
    spec = VitSpec.from_dict(old)
    assert not spec.tiled and spec.class_names == ("none", "pit")
    tiled = replace(spec, tile_size=64, tile_stride=32)
    state = tiled.to_dict()  # one view: what a version-2 bundle holds, readable by older mfgtx
    assert state["version"] == 2 and "views" not in state and VitSpec.from_dict(state) == tiled
    assert tiled.views == 1  # saved before views existed: the tile as cut
    viewed = replace(tiled, views=8)  # older mfgtx would score one view: it refuses version 3
    assert viewed.to_dict()["version"] == 3 and VitSpec.from_dict(viewed.to_dict()) == viewed
    with pytest.raises(ValueError, match="version 4, expected 1 to 3"):
        VitSpec.from_dict({**state, "version": 4})
    for forged in (3, 4.0, True, "8"):
        with pytest.raises(ValueError, match=r"views .*, expected one of \[1, 4, 8\]"):
            VitSpec.from_dict({**viewed.to_dict(), "views": forged})


def test_rare_defects_are_drawn_as_often_as_good_tiles_and_logged(trained) -> None:
    predictor = mfgtx.load(str(load_config(trained["job"]).bundle))
    counts = predictor.bundle.manifest["audit"]["summary"]["images"]
    assert counts["train_defect_tiles"] < 0.05 * counts["train_tiles"]  # rare
    assert predictor.bundle.manifest["split"]["balancing"] == "sampler"
    # never both: a sampler plan has no class weights for the loss (tests/images/test_balance.py);
    # the loss is not saved in a bundle, so it is not checked here
    (line,) = [m for m in trained["log"] if "rare class" in m]
    assert "['defect']" in line and "each class equally often" in line


def test_training_tiles_cut_train_stride_apart_are_labelled_as_the_job_tiles(photos) -> None:
    images = _images(photos, format="labelme")
    dense_images = replace(images, tiles=replace(images.tiles, train_stride=SIZE // 2))
    plain, dense = prepare_tiles(images, PLAN), prepare_tiles(dense_images, PLAN)
    pd.testing.assert_frame_equal(plain.tiles, dense.tiles)  # judging and scoring: unchanged
    assert plain.fit_tiles is None
    fit = dense.training_tiles()
    assert set(fit["photo"]) == set(dense.train.tolist()) and (fit["label"] >= 0).all()
    assert len(dense.fit_tiles) == 12 * 3 * 13  # 3 x 13 tiles 16 px apart, not 2 x 7
    assert len(fit) > 2 * len(plain.training_tiles())
    # a training tile where a job tile lies has the job tile's label and defect pixels
    key = ["photo", "top", "left"]
    both = plain.training_tiles().merge(fit, on=key, suffixes=("", "_fit"))
    assert len(both) == len(plain.training_tiles())
    assert (both["label"] == both["label_fit"]).all()
    assert (both["defect_px"] == both["defect_px_fit"]).all()
    # a pit fully inside several overlapping tiles: more defect tiles to learn from
    assert (fit["label"] == 1).sum() > (plain.training_tiles()["label"] == 1).sum()
    assert dense.counts["train_fit_tiles"] == len(fit)


def test_audit_and_evaluate_judge_a_tiled_bundle_on_its_own_test_photos(trained, capsys) -> None:
    from tests.cli.conftest import summary

    assert main(["audit", str(trained["job"])]) == 0
    audited = summary(capsys.readouterr().out)
    assert audited["passed"] and audited["method"] == "lot_time"
    assert audited["images"]["test"] == 4 and audited["images"]["ambiguous_tiles"] >= 4
    assert main(["evaluate", str(trained["job"])]) == 0
    judged = summary(capsys.readouterr().out)
    saved = mfgtx.load(str(load_config(trained["job"]).bundle)).report
    assert judged["n_test"] == saved.n_test == 4
    for k in ("average_precision", "recall", "false_alarm_rate"):
        assert judged["metrics"][k] == pytest.approx(saved.rows[0].metrics[k])
    assert "tile_average_precision" in judged["metrics"]


def test_bench_times_full_size_photos_without_labels(trained, capsys) -> None:
    from tests.cli.conftest import summary

    assert main(["bench", str(trained["job"]), "--repeats", "1"]) == 0
    speed = summary(capsys.readouterr().out)
    scored = pd.read_csv(trained["out"] / "photos.csv")
    assert speed["images"] == len(scored) and speed["tiles"] == scored["tiles"].sum()
    assert speed["images_per_s"] > 0 and speed["tiles_per_s"] > speed["images_per_s"]
    assert speed["views"] == 4  # each tile is scored 4 times: the figure says so


def _flipped(data: bytes) -> bytes:
    import io

    buf = io.BytesIO()
    Image.open(io.BytesIO(data)).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(buf, "PNG")
    return buf.getvalue()


def test_with_views_a_flipped_photo_scores_as_the_photo(trained) -> None:
    """A tile scored as the mean over its flips scores its mirror image the same: the photo,
    flipped (7 x 2 tiles map onto tiles), keeps its scores; with one view it does not."""
    from mfgtx.kinds.vit import VIT, VitPredictor

    predictor = mfgtx.load(str(load_config(trained["job"]).bundle))
    assert predictor.input_spec.views == 4
    one = VitPredictor(VIT, predictor.bundle, replace(predictor.input_spec, views=1))
    data = (trained["photos"] / "images" / "P02.png").read_bytes()
    pair = [("photo.png", data), ("flipped.png", _flipped(data))]
    for p, same in ((predictor, True), (one, False)):
        rows = p.score(pair, per_tile=True).rows
        a = np.sort(rows.loc[rows["image"] == "photo.png", "p_defect"].to_numpy())
        b = np.sort(rows.loc[rows["image"] == "flipped.png", "p_defect"].to_numpy())
        assert np.allclose(a, b, rtol=0, atol=1e-6) is same


def test_the_baselines_score_tiles_as_cut_unless_told(trained, photos) -> None:
    """Fitted without flips, HOG + LR scores a tile as cut in the bundle's report (its
    figures are the one-view scorer's); asked for views, it scores mirrored tiles alike."""
    from mfgtx.kinds.vit.tile_scores import baseline_scorers
    from mfgtx.metrics import detection_metrics

    prep = prepare_tiles(load_config(trained["job"]).images, PLAN)
    tiles = prep.cut(prep.tiles_of(prep.test))
    mirrored = tiles[:, :, ::-1].copy()
    for views, same in ((4, True), (1, False)):
        scorers = baseline_scorers(prep, cost_ratio=5.0, views=views)
        hog, _ = scorers["HOG + logistic regression"]
        assert np.allclose(hog(tiles), hog(mirrored), rtol=0, atol=1e-9) is same
    hog, thr = baseline_scorers(prep, cost_ratio=5.0)["HOG + logistic regression"]
    saved = mfgtx.load(str(load_config(trained["job"]).bundle)).tile_report
    (row,) = [r for r in saved.rows if r.name == "HOG + logistic regression"]
    rows = prep.tiles_of(prep.test, labelled=True)
    y = prep.tiles["label"].to_numpy()[rows]
    mine = detection_metrics(y, hog(prep.cut(rows)), thr, reasons=[])
    assert mine["average_precision"] == pytest.approx(row.metrics["average_precision"])


def test_the_fallback_threshold_on_validation_tiles_is_chosen_over_the_views(
    photos, tmp_path, monkeypatch
) -> None:
    """When the validation photos cannot carry the threshold (one class only), it is chosen
    on the validation tiles, and with views on their P(defect) over the views, as scored."""
    import mfgtx.kinds.vit.tile_scores as tile_scores
    from mfgtx.calibration import choose_threshold

    monkeypatch.setattr(tile_scores, "image_threshold", lambda *a: (None, "one class (test)"))
    views = {"images": {**tiles_job(photos, tmp_path)["images"], "views": 4}}
    job = write_job(tmp_path / "tiles.yaml", tiles_job(photos, tmp_path, **views))
    assert main(["train", "vit", str(job)]) == 0
    config = load_config(job)
    predictor = mfgtx.load(str(config.bundle))
    assert predictor.bundle.manifest["split"]["threshold_chosen_on"] == "validation tiles"
    prep = prepare_tiles(config.images, config.split, seed=config.train.seed)
    rows = prep.tiles_of(prep.val, labelled=True)
    y = (prep.tiles["label"].to_numpy()[rows] == 1).astype(int)
    cal = predictor.calibration
    again = choose_threshold(predictor.tile_p(prep.cut(rows)), y,
                             cost_missed_defect=cal.threshold.cost_missed_defect)  # fmt: skip
    assert cal.threshold.threshold == pytest.approx(again.threshold, rel=0, abs=1e-9)
    assert (cal.threshold.tp, cal.threshold.fp) == (again.tp, again.fp)
