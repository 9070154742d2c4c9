"""mfgtx.images: defensive reading, records, duplicate-aware splits, augmentation."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from mfgtx.images import (
    DuplicateWarning,
    ImageDataset,
    ImageError,
    ImageRecords,
    SurfaceAugment,
    class_weights,
    load_images,
    read_image,
    read_images,
    split_images,
)
from mfgtx.split import audit


def png(mode: str = "L", size: tuple[int, int] = (32, 32), value=100, **save) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, value).save(buf, format="PNG", **save)
    return buf.getvalue()


def noisy_jpeg(size: tuple[int, int] = (64, 64), seed: int = 0) -> bytes:
    arr = np.random.default_rng(seed).integers(0, 256, (size[1], size[0]), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


# ---------------------------------------------------------------------- bad images


def test_good_grey_and_rgb_images_read_in_the_asked_mode() -> None:
    assert read_image(("g.png", png("L", (40, 30)))).shape == (30, 40)
    rgb = read_image(("c.png", png("RGB", (40, 30), (200, 10, 10))), mode="RGB")
    assert rgb.shape == (30, 40, 3) and rgb.dtype == np.uint8 and tuple(rgb[0, 0]) == (200, 10, 10)
    assert read_image(("c.png", png("RGB", (40, 30), (200, 10, 10)))).shape == (30, 40)
    assert read_image(("j.jpg", noisy_jpeg())).shape == (64, 64)


BAD = {
    "16-bit": (png("I;16", value=40000), r"unexpected mode 'I;16': 16-bit grey"),
    "palette": (png("P"), r"unexpected mode 'P': palette"),
    "RGBA": (png("RGBA", value=(1, 2, 3, 4)), r"unexpected mode 'RGBA': RGB with an alpha"),
    "tiny": (png("L", (4, 30)), r"4x30 pixels is smaller than min_size=8"),
    "truncated": (noisy_jpeg()[:600], r"truncated or corrupt image data"),
    "corrupt": (b"\x89PNG\r\n\x1a\n" + b"garbage" * 20, r"truncated or corrupt image data"),
    "empty": (b"", r"empty file"),
    "text": (b"lot,label\nA,1\n", r"not an image file that can be read"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_bad_image_gives_an_error_naming_the_file_and_reason(case) -> None:
    data, reason = BAD[case]
    with pytest.raises(ImageError, match=rf"^bad/{case}\.png: .*") as err:
        read_image((f"bad/{case}.png", data))
    assert err.value.source == f"bad/{case}.png"
    assert re.search(reason, err.value.reason), err.value.reason


def test_truncated_png_is_refused() -> None:
    data = png("L", (64, 64), value=None)  # uninitialised -> still a valid PNG
    full = read_image(("ok.png", data))
    assert full.shape == (64, 64)
    big = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8)).save(
        big, format="PNG"
    )
    with pytest.raises(ImageError, match="cut.png: truncated or corrupt"):
        read_image(("cut.png", big.getvalue()[: len(big.getvalue()) // 2]))


def test_decompression_bomb_is_refused_before_decoding(monkeypatch) -> None:
    data = png("L", (100, 100))
    with pytest.raises(ImageError, match=r"100x100 = 10000 pixels exceeds max_pixels=5000"):
        read_image(("bomb.png", data), max_pixels=5000)
    # Pillow's own limit (warning above MAX_IMAGE_PIXELS, error above twice that) is an error too
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 6000)
    with pytest.raises(ImageError, match="bomb.png: decompression bomb refused"):
        read_image(("bomb.png", data))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 2000)
    with pytest.raises(ImageError, match="bomb.png: decompression bomb refused"):
        read_image(("bomb.png", data))


def test_missing_file_is_an_image_error(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="nope.png: cannot be read"):
        read_image(tmp_path / "nope.png")


def test_batch_keeps_good_images_and_lists_every_bad_one() -> None:
    sources = [("good0.png", png())] + [(f"{k}.png", d) for k, (d, _) in sorted(BAD.items())]
    sources.append(("good1.jpg", noisy_jpeg()))
    batch = read_images(sources)
    assert batch.indices == [0, len(sources) - 1]
    assert [e.source for e in batch.errors] == [f"{k}.png" for k in sorted(BAD)]
    images, idx, errors = load_images(sources, 16)
    assert images.shape == (2, 1, 16, 16) and idx == [0, len(sources) - 1]
    assert len(errors) == len(BAD)
    assert float(images.min()) >= 0.0 and float(images.max()) <= 1.0


# ---------------------------------------------------------------------- records


def _write_folder(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def test_folder_per_class_from_a_directory_and_from_a_zip(tmp_path: Path) -> None:
    files = {
        "data/scratch/a.png": png(value=1),
        "data/scratch/b.PNG": png(value=2),
        "data/pit/c.jpg": noisy_jpeg(),
        "data/pit/notes.txt": b"not an image",
    }
    _write_folder(tmp_path / "dir", files)
    with zipfile.ZipFile(tmp_path / "set.zip", "w") as z:
        for rel, data in files.items():
            z.writestr("top/" + rel, data)
    a = ImageRecords.from_folder(tmp_path / "dir" / "data")
    b = ImageRecords.from_folder(tmp_path / "set.zip", subdir="top/data")
    for r in (a, b):
        assert r.class_names == ("pit", "scratch")
        assert r.frame["path"].tolist() == ["pit/c.jpg", "scratch/a.png", "scratch/b.PNG"]
        assert r.labels.tolist() == [0, 1, 1]
        assert [d for _, d in r.read_bytes()] == [
            files["data/pit/c.jpg"],
            files["data/scratch/a.png"],
            files["data/scratch/b.PNG"],
        ]
    assert b.names[0] == f"{tmp_path / 'set.zip'}/top/data/pit/c.jpg"
    with pytest.raises(ValueError, match="no images found in class folders"):
        ImageRecords.from_folder(tmp_path / "set.zip", subdir="elsewhere")


def test_manifests_are_read_bounded_and_name_the_files_own_lines(tmp_path: Path) -> None:
    import gzip

    from mfgtx.images import read_manifest
    from mfgtx.kinds.vit.tiles import _list_photos

    _write_folder(tmp_path, {"img/1.png": png(value=1), "img/2.png": png(value=2)})
    m = tmp_path / "m.csv"
    m.write_text(  # a note with a line break inside quotes: the next record starts on line 4
        'path,label,note\nimg/1.png,pit,"two\nlines"\nimg/3.png,pit,\n'
    )
    assert read_manifest(m)[1] == [2, 4]
    with pytest.raises(
        ValueError, match=r"do not exist, first \(line, path\): \[\(4, 'img/3.png'\)"
    ):
        ImageRecords.from_manifest(m)
    m.write_text("path,label\nimg/1.png,pit\n\nimg/2.png,\n")
    with pytest.raises(ValueError, match=r"m.csv: empty 'label' on line\(s\) \[4\]"):
        ImageRecords.from_manifest(m)
    m.write_text("path,label,path\nimg/1.png,pit,img/2.png\n")
    with pytest.raises(ValueError, match=r"names the column 'path' twice \(columns 1 and 3\)"):
        ImageRecords.from_manifest(m)
    m.write_text("path,label\nimg/1.png,pit,extra\n")
    with pytest.raises(ValueError, match="line 2 has 3 values, the header names 2 columns"):
        _list_photos(str(m))
    m.write_bytes(gzip.compress(b"path,label\nimg/1.png,pit\n"))
    with pytest.raises(ValueError, match="m.csv: is a gzip file; give the manifest as plain CSV"):
        ImageRecords.from_manifest(m)
    m.write_bytes(b"path,label\nimg/1.png,Gr\xfcn\n")
    with pytest.raises(ValueError, match="m.csv: line 2 is not UTF-8 text"):
        ImageRecords.from_manifest(m)
    with open(m, "wb") as f:  # a sparse file: nothing is read before it is refused
        f.write(b"path,label\n")
        f.truncate(2 * 2**30)
    with pytest.raises(ValueError, match=r"2,048 MB is larger than an image manifest may be"):
        read_manifest(m)


def test_manifest_with_lots_and_clear_errors(tmp_path: Path) -> None:
    _write_folder(tmp_path, {"img/1.png": png(value=1), "img/2.png": png(value=2)})
    m = tmp_path / "m.csv"
    m.write_text(
        "path,label,lot,timestamp\nimg/1.png,pit,L1,2026-03-02T06:00:00Z\n"
        "img/2.png,none,L2,2026-03-02T07:00:00Z\n"
    )
    r = ImageRecords.from_manifest(m, class_names=["none", "pit"])
    assert r.labels.tolist() == [1, 0] and r.has_lots
    dtype = r.frame["timestamp"].dtype
    assert isinstance(dtype, pd.DatetimeTZDtype) and str(dtype.tz) == "UTC"
    m.write_text("path,label,lot,timestamp\nimg/1.png,pit,L1,yesterday\n")
    with pytest.raises(ValueError, match=r"m.csv: timestamp not ISO 8601 on line\(s\) \[2\]"):
        ImageRecords.from_manifest(m)
    m.write_text("path,label\nimg/1.png,pit\nimg/3.png,pit\n")
    with pytest.raises(ValueError, match=r"1 listed file\(s\) do not exist.*\(3, 'img/3.png'\)"):
        ImageRecords.from_manifest(m)
    m.write_text("path,lot\nimg/1.png,L1\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['label'\]"):
        ImageRecords.from_manifest(m)
    m.write_text("path,label,lot\nimg/1.png,pit,L1\n")
    with pytest.raises(ValueError, match="'lot' column needs .* 'timestamp' column"):
        ImageRecords.from_manifest(m)
    m.write_text("path,label\nimg/1.png,dent\n")
    with pytest.raises(ValueError, match=r"labels \['dent'\] are not in class_names"):
        ImageRecords.from_manifest(m, class_names=["none", "pit"])


# ---------------------------------------------------------------------- splits


def unique_png(k: int) -> bytes:
    arr = np.zeros((16, 16), dtype=np.uint8)
    arr[0, 0], arr[0, 1] = k % 256, k // 256
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _records(n_per_class: dict[str, int], dup_pairs: int, tmp_path: Path, lots: bool = False):
    """Images of classes ``n_per_class``; in class "a", image 2j+1 duplicates image 2j for
    j < dup_pairs. Image i of any class is in lot ``L{i % 10}``, on day ``i % 10``."""
    rows, k = [], 0
    for c, n in n_per_class.items():
        for i in range(n):
            dup = c == "a" and i < 2 * dup_pairs and i % 2 == 1
            k += 0 if dup else 1
            _write_folder(tmp_path, {f"{c}/{i}.png": unique_png(k)})
            day = pd.Timestamp("2026-03-02", tz="UTC") + pd.Timedelta(days=i % 10)
            rows.append((f"{c}/{i}.png", c, f"L{i % 10}", day + pd.Timedelta(hours=i // 10)))
    frame = pd.DataFrame(rows, columns=["path", "label", "lot", "timestamp"])
    if not lots:
        frame = frame[["path", "label"]]
    frame.to_csv(tmp_path / "m.csv", index=False)
    return ImageRecords.from_manifest(tmp_path / "m.csv")


def test_stratified_split_keeps_duplicates_together_and_class_shares(tmp_path: Path) -> None:
    r = _records({"a": 60, "b": 30, "c": 10}, dup_pairs=8, tmp_path=tmp_path)
    hashes = r.content_hashes()
    assert len(set(hashes)) == 100 - 8
    for seed in range(5):
        s = split_images(r, test_size=0.2, val_size=0.1, seed=seed, hashes=hashes)
        assert s.method == "stratified"
        sets = [set(s.train), set(s.val), set(s.test)]
        assert sum(map(len, sets)) == 100 and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
        where = {i: k for k, part in enumerate(sets) for i in part}
        for h in set(hashes):
            members = np.flatnonzero(hashes == h)
            assert len({where[i] for i in members}) == 1  # duplicates share one set
        y = r.labels
        for c, n in enumerate((60, 30, 10)):
            assert abs((y[s.test] == c).sum() - 0.2 * n) <= 1.5
    a = split_images(r, test_size=0.2, seed=3, hashes=hashes)
    b = split_images(r, test_size=0.2, seed=3, hashes=hashes)
    c = split_images(r, test_size=0.2, seed=4, hashes=hashes)
    assert np.array_equal(a.test, b.test) and not np.array_equal(a.test, c.test)


def test_duplicates_with_different_labels_are_refused(tmp_path: Path) -> None:
    _write_folder(tmp_path, {"x/1.png": png(value=7), "y/2.png": png(value=7)})
    r = ImageRecords.from_folder(tmp_path)
    with pytest.raises(
        ValueError, match=r"byte-identical images carry different labels: .*x/1.png"
    ):
        split_images(r)


def test_lot_split_is_lot_and_time_safe_and_keeps_duplicates_together(tmp_path: Path) -> None:
    r = _records({"a": 60, "b": 30, "c": 10}, dup_pairs=8, tmp_path=tmp_path, lots=True)
    with pytest.warns(
        DuplicateWarning,
        match=r"byte-identical images in different lots: \['L0', 'L1'\], \['L2', 'L3'\]",
    ):
        s = split_images(r, test_size=0.2, val_size=0.1)
    assert s.method == "lot_time" and s.lot_sets is not None
    assert s.test.flags.writeable  # torch warns when indexing with read-only arrays
    lots = r.frame["lot"].to_numpy()
    # duplicates merged lots L0-L1, L2-L3 ... into 5 groups: 1 test group, 1 val, 3 train
    assert set(lots[s.test]) == {"L8", "L9"}
    assert set(lots[s.train]).isdisjoint(lots[s.test])
    t = r.frame["timestamp"]
    windows = pd.DataFrame({"lot": lots, "start": t, "end": t})
    report = audit(windows, {"train": s.train, "val": s.val, "test": s.test}, gap="0s")
    assert report.passed


def test_split_sizes_are_checked(tmp_path: Path) -> None:
    r = _records({"a": 4, "b": 4}, dup_pairs=0, tmp_path=tmp_path)
    with pytest.raises(ValueError, match="test_size must be in"):
        split_images(r, test_size=0.6, val_size=0.5)


# ---------------------------------------------------------------------- tensors


def test_augment_keeps_range_and_rotation_is_off_by_default() -> None:
    torch.manual_seed(0)
    x = torch.zeros(1, 32, 32)
    x[:, 15:17, :] = 1.0  # a horizontal scratch
    aug = SurfaceAugment(brightness=0.0, contrast=0.0, crop_scale=(1.0, 1.0))
    for _ in range(20):
        out = aug(x)
        assert out.sum(1).max() < out.sum(2).max()  # still horizontal after flips
    rot = SurfaceAugment(rot90=True, brightness=0.0, contrast=0.0, crop_scale=(1.0, 1.0))
    assert any(float(rot(x).sum(1).max()) > 20 for _ in range(20))  # vertical at times
    noisy = SurfaceAugment()
    outs = [noisy(torch.rand(1, 32, 32)) for _ in range(10)]
    assert all(o.shape == (1, 32, 32) and 0 <= o.min() and o.max() <= 1 for o in outs)
    with pytest.raises(ValueError, match="crop_scale"):
        SurfaceAugment(crop_scale=(0.0, 1.0))


def test_dataset_samples_and_class_weights() -> None:
    x = torch.rand(6, 1, 16, 16)
    d = ImageDataset(x, [0, 0, 0, 0, 1, 2])
    s = d[4]
    assert s["y"].item() == 1 and torch.allclose(s["images"], (x[4] - 0.5) / 0.5)
    w = class_weights([0, 0, 0, 0, 1, 2], 4)
    assert w[1] == w[2] > w[0] and w[3] == 1.0
    assert np.isclose(np.mean(w[:3]), 1.0)
    with pytest.raises(ValueError, match=r"labels must be \(6,\)"):
        ImageDataset(x, [0, 1])


# ---------------------------------------------------------------------- X-SDD


def test_xsdd_zip_reads_with_its_duplicates_kept_together(datasets_dir: Path) -> None:
    z = datasets_dir / "xsdd" / "X-SDD.zip"
    if not z.is_file():
        pytest.skip(f"X-SDD not found at {z}")
    r = ImageRecords.from_folder(z, subdir="X-SDD/datas")
    assert len(r) == 1360 and len(r.class_names) == 7
    hashes = r.content_hashes()
    assert len(r) - len(set(hashes)) == 9  # the nine duplicate pairs of "red iron"
    s = split_images(r, test_size=0.2, seed=0, hashes=hashes)
    test_hashes = set(hashes[s.test])
    assert test_hashes.isdisjoint(hashes[s.train])
    batch = read_images(r.read_bytes([0, 1]))
    assert not batch.errors and batch.images[0].shape == (128, 128)
