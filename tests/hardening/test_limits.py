"""Sizes are checked before anything is read: huge images, zip bombs, swapped weights."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import resource
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mfgtx.cli import main
from mfgtx.data import DataError
from mfgtx.images import MAX_IMAGE_BYTES, ImageError, read_image_file, read_zip_member
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobfile.sources import iter_lot_frames, read_csv_bytes, read_frame
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
                       n_layers=1, d_ff=16, dropout=0.0, stem="linear")  # fmt: skip
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


# ----------------------------------------------------------- what a CSV input decodes into


class _CountedFile(io.FileIO):
    """A file that records how many bytes were read from it, and the largest read."""

    total = 0
    largest = 0

    def readinto(self, buffer):  # type: ignore[override]
        n = super().readinto(buffer) or 0
        _CountedFile.total += n
        _CountedFile.largest = max(_CountedFile.largest, n)
        return n


def _giant_lines(folder: Path) -> dict[str, Path]:
    """Files whose second line never ends within memory: NUL bytes (``truncate -s``), values
    without a line break, an opened quote that is never closed, the same inside gzip."""
    sparse = folder / "sparse.csv"
    sparse.write_bytes(b"lot,time,temp\n")
    with sparse.open("r+b") as f:
        f.truncate(200 << 20)  # sparse: nothing is written to disk
    one_line = folder / "one_line.csv"
    one_line.write_bytes(b"lot;time;temp\n" + b"A;1;2;" * (4 << 20))
    quote = folder / "quote.csv"
    quote.write_bytes(b'lot,time,temp\nA,1,"2\n' + b"A,1,2\n" * (1 << 20))
    packed = folder / "zeros.csv.gz"
    packed.write_bytes(gzip.compress(b"lot,time,temp\n" + b"\0" * (64 << 20), 1))
    return {"sparse": sparse, "one_line": one_line, "quote": quote, "gzip": packed}


def test_a_line_that_never_ends_is_refused_after_reading_a_bounded_amount(
    tmp_path, monkeypatch
) -> None:
    """Memory is bounded by the block whatever the file's line structure: each file is
    refused by its line 2 after at most a few MB read (pandas read all of a 2 GB sparse
    file into 6.7 GB)."""
    from mfgtx.data import _csv

    monkeypatch.setattr(_csv, "open", lambda p, mode: io.BufferedReader(_CountedFile(p)),
                        raising=False)  # fmt: skip
    before = _peak_mb()
    for kind, path in _giant_lines(tmp_path).items():
        _CountedFile.total = _CountedFile.largest = 0
        with pytest.raises(DataError, match=rf"{path.name}: line 2\b") as e:
            read_frame(SourceSection(path=str(path)))
        assert e.value.line == 2 and e.value.file == path.name
        assert _CountedFile.total <= 8 << 20, kind  # of a file of 20 MB and more
        assert _CountedFile.largest <= 2 << 20, kind
    assert _peak_mb() - before < 150


def test_the_longest_line_is_named_in_words(tmp_path) -> None:
    f = tmp_path / "export.csv"
    f.write_bytes(b"lot,time,temp\n" + b"\0" * (3 << 20))
    with pytest.raises(DataError, match=r"line 2 is longer than 1 MB; this is not a CSV of"):
        read_frame(SourceSection(path=str(f)))


def _packed(path: Path, kind: str, data: bytes) -> Path:
    if kind == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("export.csv", data)
    else:
        path.write_bytes({"gz": gzip, "bz2": bz2, "xz": lzma}[kind].compress(data))
    return path


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip"])
def test_a_compressed_source_stops_at_its_inflated_size(tmp_path, kind) -> None:
    row = b"A,2026-03-02T07:22:00Z,1.5\n"
    data = b"lot,time,temp\n" + row * ((3 << 20) // len(row))  # 3 MB
    packed = _packed(tmp_path / f"export.csv.{kind}", kind, data)
    assert packed.stat().st_size < 100_000
    source = SourceSection(path=str(packed), max_inflated_mb=1)
    with pytest.raises(DataError, match=rf"{packed.name}: .*inflates to .*1 MB") as e:
        read_frame(source)
    assert e.value.file == packed.name and (
        kind == "zip" or "source.max_inflated_mb" in str(e.value)
    )
    with pytest.raises(DataError, match=r"inflates to .*1 MB"):
        read_csv_bytes(packed.read_bytes(), packed.name, max_inflated_mb=1)
    assert len(read_frame(SourceSection(path=str(packed), max_inflated_mb=4))) == (3 << 20) // len(
        row
    )


def test_an_upload_stops_at_the_dashboard_limit(tmp_path) -> None:
    from mfgtx.data.io import UPLOAD_INFLATED_MB

    row = b"A," + b"1" * 4094 + b"\n"  # long rows: few of them to parse up to the limit
    bomb = gzip.compress(b"lot,temp\n" + row * ((UPLOAD_INFLATED_MB + 1) << 8), 1)
    before = _peak_mb()
    with pytest.raises(DataError, match=rf"{UPLOAD_INFLATED_MB} MB \(the limit for an upload\)"):
        read_csv_bytes(bomb, "upload.csv.gz")
    assert _peak_mb() - before < 8 * UPLOAD_INFLATED_MB  # was 3.5 GB for a 3 GB bomb


def _lots_file(path: Path, sizes: dict[str, int]) -> Path:
    rows = [f"{lot},2026-03-02T{i // 60:02d}:{i % 60:02d}:00Z,1" for lot, n in sizes.items()
            for i in range(n)]  # fmt: skip
    path.write_text("lot,time,temp\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("chunk_rows", [40, 1000])
def test_a_lot_larger_than_max_lot_rows_is_refused_by_name(tmp_path, chunk_rows) -> None:
    f = _lots_file(tmp_path / "export.csv", {"L1": 50, "L7": 300, "L8": 20})
    source = SourceSection(path=str(f), chunk_rows=chunk_rows, max_lot_rows=200)
    with pytest.raises(DataError, match=r"lot L7 has more than 200 rows \(from export.csv line 52\)"
                       r".*raise source.max_lot_rows") as e:  # fmt: skip
        list(iter_lot_frames(source, "lot", "time"))
    assert e.value.lot == "L7"
    problems: list[dict] = []
    frames = list(iter_lot_frames(source, "lot", "time", problems=problems))
    assert [f["lot"].unique().tolist() for f in frames] == [["L1"], ["L8"]]
    assert frames[1]["_line"].iloc[0] == 352
    assert [(p["lot"], p["file"], p["line"]) for p in problems] == [("L7", "export.csv", 52)]


def test_scoring_lists_a_lot_too_large_and_scores_the_others(quality_bundle, plant, tmp_path,
                                                             capsys) -> None:  # fmt: skip
    job, _ = quality_bundle
    df = pd.read_csv(plant / "sensors.csv", dtype=str, keep_default_na=False)
    lots = list(dict.fromkeys(df["lot"]))
    big = lots[1]
    df = df[(df["lot"] == big) | (df.groupby("lot").cumcount() < 150)]
    source = tmp_path / "export.csv.gz"
    source.write_bytes(gzip.compress(df.to_csv(index=False).encode()))
    code = main(["score", str(job), "--set",
                 f"score.source={{path: {source}, max_lot_rows: 180, chunk_rows: 64}}",
                 "--set", f"score.output.path={tmp_path / 's.parquet'}"])  # fmt: skip
    result = summary(capsys.readouterr().out)
    assert code == 0 and result["bad_lots"] == 1
    errors = pd.read_csv(result["errors_file"])
    first = int(df.index.get_loc(df.index[df["lot"] == big][0])) + 2
    assert errors[["lot", "file", "line"]].values.tolist() == [[big, source.name, first]]
    assert "more than 180 rows" in errors["reason"].iloc[0]
    assert set(pd.read_parquet(tmp_path / "s.parquet")["lot"]) == set(lots) - {big}


@pytest.mark.parametrize("key", ["chunk_rows", "chunk_mb", "max_inflated_mb", "max_lot_rows"])
def test_source_limits_are_whole_numbers(key) -> None:
    with pytest.raises(ValueError, match=rf"{key}: a whole number >= 1, found 0"):
        SourceSection(path="export.csv", **{key: 0})
