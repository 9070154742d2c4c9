"""Sizes are checked before anything is read: huge images, zip bombs, swapped weights."""

from __future__ import annotations

import io
import os
import resource
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mfgtx.cli import main
from mfgtx.images import MAX_IMAGE_BYTES, ImageError, read_image_file, read_zip_member
from tests.cli.conftest import summary, write_job


def _png(value: int = 120) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((16, 16), value, np.uint8), mode="L").save(buf, "PNG")
    return buf.getvalue()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_huge_file_named_png_is_refused_before_reading(tmp_path) -> None:
    big = tmp_path / "huge.png"
    with big.open("wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: nothing is written to disk
    before = _peak_mb()
    with pytest.raises(ImageError, match="refused before reading"):
        read_image_file(big)
    assert _peak_mb() - before < 100  # it read the whole GiB before


def test_a_zip_member_that_inflates_too_far_is_refused_before_inflating(tmp_path) -> None:
    bomb = tmp_path / "images.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("good/bomb.png", b"\0" * (8 << 20))  # 8 MiB of zeros: 8 KiB zipped
        z.writestr("good/fine.png", _png())
    assert bomb.stat().st_size < 100_000
    with zipfile.ZipFile(bomb) as z:
        with pytest.raises(ImageError, match="inflates to 8 MB.*refused before inflating"):
            read_zip_member(z, "good/bomb.png", limit=1 << 20)
        assert read_zip_member(z, "good/fine.png", limit=1 << 20) == _png()
    assert MAX_IMAGE_BYTES == 256 << 20  # the default limit: a 64-megapixel RGB TIFF fits


def test_weights_swapped_for_a_huge_link_are_refused_before_reading(quality_bundle, tmp_path):
    import shutil

    from mfgtx.artifacts import BundleError
    from tests.bundles import load as load_bundle

    _, bundle = quality_bundle
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as f:
        f.truncate(3 << 29)  # 1.5 GiB, sparse
    (copy / "weights.safetensors").unlink()
    os.symlink(huge, copy / "weights.safetensors")
    before = _peak_mb()
    with pytest.raises(BundleError, match="symbolic link"):
        load_bundle(copy)
    (copy / "weights.safetensors").unlink()
    with (copy / "weights.safetensors").open("wb") as f:  # a plain file of the wrong size
        f.truncate(3 << 29)
    with pytest.raises(BundleError, match="bytes longer than"):
        load_bundle(copy)
    assert _peak_mb() - before < 100


@pytest.fixture(scope="module")
def vit_bundle(tmp_path_factory) -> Path:
    """An (untrained) 16-px DefectViT bundle as ``train vit`` writes it."""
    import torch

    from mfgtx.kinds import VitSpec
    from mfgtx.models import DefectViT, ViTConfig
    from tests.bundles import save

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("vit") / "vit"
    config = ViTConfig(image_size=16, patch_size=8, num_classes=2, d_model=8, n_heads=2,
                       n_layers=1, d_ff=16)  # fmt: skip
    spec = VitSpec(image_size=16, mode="L", min_size=8, mean=0.5, std=0.5,
                   class_names=("none", "pit"), good_class=None)  # fmt: skip
    save(out, DefectViT(config), spec=spec)
    return out


def test_a_repeated_manifest_row_is_listed_and_scored_once(vit_bundle, tmp_path, capsys) -> None:
    folder = tmp_path / "imgs"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        (folder / name).write_bytes(_png())
    manifest = folder / "manifest.csv"
    pd.DataFrame({"path": ["a.png", "b.png", "a.png"]}).to_csv(manifest, index=False)
    out = tmp_path / "scores.csv"
    job = write_job(
        tmp_path / "job.yaml",
        {
            "bundle": str(vit_bundle),
            "score": {"images": str(manifest), "output": {"path": str(out)}},
        },
    )
    assert main(["score", str(job)]) == 0
    result = summary(capsys.readouterr().out)
    assert result["images"] == 2 and result["bad_images"] == 1
    errors = pd.read_csv(result["errors_file"])
    assert errors["file"].tolist() == ["a.png"] and "listed twice" in errors["reason"].iloc[0]
    assert sorted(pd.read_csv(out)["image"]) == ["a.png", "b.png"]


def test_a_huge_image_in_a_scored_folder_is_listed_and_the_rest_scored(
    vit_bundle, tmp_path, capsys
) -> None:
    folder = tmp_path / "imgs"
    folder.mkdir()
    (folder / "ok.png").write_bytes(_png())
    with (folder / "huge.png").open("wb") as f:
        f.truncate(1 << 30)
    out = tmp_path / "scores.csv"
    job = write_job(
        tmp_path / "job.yaml",
        {"bundle": str(vit_bundle), "score": {"images": str(folder), "output": {"path": str(out)}}},
    )
    assert main(["score", str(job)]) == 0
    result = summary(capsys.readouterr().out)
    assert result["images"] == 1 and result["bad_images"] == 1
    assert "refused before reading" in pd.read_csv(result["errors_file"])["reason"].iloc[0]


def test_training_leaves_out_a_repeated_manifest_row_with_a_warning(tmp_path) -> None:
    from mfgtx.data import DataWarning
    from mfgtx.images import ImageRecords

    for name in ("a.png", "b.png"):
        (tmp_path / name).write_bytes(_png())
    manifest = tmp_path / "m.csv"
    pd.DataFrame({"path": ["a.png", "b.png", "a.png"], "label": ["x", "y", "x"]}).to_csv(
        manifest, index=False
    )
    with pytest.warns(DataWarning, match=r"list a file a second time \(lines \[4\]\)"):
        records = ImageRecords.from_manifest(manifest)
    assert len(records) == 2
    pd.DataFrame({"path": ["a.png", "a.png"], "label": ["x", "y"]}).to_csv(manifest, index=False)
    with pytest.raises(ValueError, match="line 3 lists a.png again with label 'y'; line 2"):
        ImageRecords.from_manifest(manifest)
