"""A crash while saving never leaves a half-written bundle or replaces a good one."""

from __future__ import annotations

import os

import pytest

from mfgtx.artifacts import _atomic, load_bundle, save_bundle


class DiskFull(OSError):
    pass


def _crash_writing_weights(monkeypatch) -> None:
    """The weights writer dies halfway through ``weights.safetensors``."""
    real = _atomic.write_file

    def write_half(file, data):
        if file.name == "weights.safetensors":
            with open(file, "xb") as f:
                f.write(data[: len(data) // 2])
            raise DiskFull("no space left on device")
        real(file, data)

    monkeypatch.setattr(_atomic, "write_file", write_half)


def test_crash_leaves_nothing_at_the_target(tmp_path, tiny_model, monkeypatch) -> None:
    _crash_writing_weights(monkeypatch)
    with pytest.raises(DiskFull):
        save_bundle(tmp_path / "b", tiny_model)
    assert list(tmp_path.iterdir()) == []  # no bundle, no staging directory


def test_crash_while_overwriting_keeps_the_old_bundle(bundle_path, tiny_model, monkeypatch) -> None:
    before = load_bundle(bundle_path).bundle_id
    _crash_writing_weights(monkeypatch)
    with pytest.raises(DiskFull):
        save_bundle(bundle_path, tiny_model, metrics={"mae": 9.0}, overwrite=True)
    assert load_bundle(bundle_path).bundle_id == before
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_failed_swap_puts_the_old_bundle_back(bundle_path, tiny_model, monkeypatch) -> None:
    before = load_bundle(bundle_path).bundle_id
    real_rename = os.rename

    def rename(src, dst):
        if str(src).endswith(".tmp"):  # the new bundle moving into place
            raise DiskFull("rename failed")
        real_rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", rename)
    with pytest.raises(DiskFull):
        save_bundle(bundle_path, tiny_model, metrics={"mae": 9.0}, overwrite=True)
    monkeypatch.undo()
    assert load_bundle(bundle_path).bundle_id == before
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_existing_bundle_is_not_overwritten_by_default(bundle_path, tiny_model) -> None:
    before = load_bundle(bundle_path).bundle_id
    with pytest.raises(FileExistsError, match="bundle already exists; pass overwrite=True"):
        save_bundle(bundle_path, tiny_model)
    assert load_bundle(bundle_path).bundle_id == before
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_overwrite_replaces_the_bundle_and_cleans_up(bundle_path, tiny_model) -> None:
    before = load_bundle(bundle_path).bundle_id
    save_bundle(bundle_path, tiny_model, metrics={"mae": 9.0}, overwrite=True)
    bundle = load_bundle(bundle_path)
    assert bundle.bundle_id != before and bundle.manifest["metrics"] == {"mae": 9.0}
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_overwrite_never_replaces_something_that_is_not_a_bundle(tmp_path, tiny_model) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lots.csv").write_text("lot,time\n")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="directory with no manifest.json, not a bundle"):
        save_bundle(tmp_path / "data", tiny_model, overwrite=True)
    with pytest.raises(FileExistsError, match="it is not a bundle directory"):
        save_bundle(tmp_path / "file", tiny_model, overwrite=True)
    assert (tmp_path / "data" / "lots.csv").read_text() == "lot,time\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "file"]


def test_missing_parent_directories_are_created(tmp_path, tiny_model) -> None:
    path = save_bundle(tmp_path / "plant" / "line3" / "model", tiny_model)
    assert load_bundle(path).path == path
