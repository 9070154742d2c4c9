"""A crash while saving never leaves a half-written bundle or replaces a good one."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest

from mfgtx._files import claim_folder, remove_leftovers, remove_written
from mfgtx.artifacts import _atomic, load_bundle, save_bundle

from .conftest import TinyModel


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
    before = load_bundle(bundle_path, classes=[TinyModel]).bundle_id
    _crash_writing_weights(monkeypatch)
    with pytest.raises(DiskFull):
        save_bundle(bundle_path, tiny_model, metrics={"mae": 9.0}, overwrite=True)
    assert load_bundle(bundle_path, classes=[TinyModel]).bundle_id == before
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_failed_swap_puts_the_old_bundle_back(bundle_path, tiny_model, monkeypatch) -> None:
    before = load_bundle(bundle_path, classes=[TinyModel]).bundle_id
    real_rename = os.rename

    def rename(src, dst):
        if str(src).endswith(".tmp"):  # the new bundle moving into place
            raise DiskFull("rename failed")
        real_rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", rename)
    with pytest.raises(DiskFull):
        save_bundle(bundle_path, tiny_model, metrics={"mae": 9.0}, overwrite=True)
    monkeypatch.undo()
    assert load_bundle(bundle_path, classes=[TinyModel]).bundle_id == before
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_existing_bundle_is_not_overwritten_by_default(bundle_path, tiny_model) -> None:
    before = load_bundle(bundle_path, classes=[TinyModel]).bundle_id
    with pytest.raises(FileExistsError, match="bundle already exists; pass overwrite=True"):
        save_bundle(bundle_path, tiny_model)
    assert load_bundle(bundle_path, classes=[TinyModel]).bundle_id == before
    assert [p.name for p in bundle_path.parent.iterdir()] == ["bundle"]


def test_overwrite_replaces_the_bundle_and_cleans_up(bundle_path, tiny_model) -> None:
    before = load_bundle(bundle_path, classes=[TinyModel]).bundle_id
    save_bundle(bundle_path, tiny_model, metrics={"mae": 9.0}, overwrite=True)
    bundle = load_bundle(bundle_path, classes=[TinyModel])
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
    assert load_bundle(path, classes=[TinyModel]).path == path


def test_staging_and_aside_folders_carry_mfgtx_token(bundle_path, tiny_model, monkeypatch):
    names = []
    real_rename = os.rename

    def rename(src, dst):
        names.append((os.path.basename(src), os.path.basename(dst)))
        real_rename(src, dst)

    monkeypatch.setattr(_atomic.os, "rename", rename)
    save_bundle(bundle_path, tiny_model, overwrite=True)
    (_, aside), (staging, _) = names  # the old bundle aside, then the new one in
    assert aside.startswith(".bundle.mfgtx-") and aside.endswith(".old")
    assert staging.startswith(".bundle.mfgtx-") and staging.endswith(".tmp")


def test_a_killed_save_leaves_only_what_the_next_run_removes(
    tmp_path, tiny_model, monkeypatch
) -> None:
    def killed(*args):
        raise SystemExit(137)  # what a scheduler's kill leaves: the staging folder stays

    monkeypatch.setattr(_atomic.shutil, "rmtree", lambda *a, **k: None)
    monkeypatch.setattr(_atomic, "_commit", killed)
    with pytest.raises(SystemExit):
        save_bundle(tmp_path / "model", tiny_model)
    monkeypatch.undo()
    users = tmp_path / ".model.old"
    users.mkdir()
    (users / "weights.safetensors").write_bytes(b"the user's copy of last month's model")
    (staging,) = (p for p in tmp_path.iterdir() if p.name.startswith(".model.mfgtx-"))
    assert remove_leftovers(tmp_path / "model") == [staging] and not staging.exists()
    assert (users / "weights.safetensors").exists()


def test_a_folder_with_a_manifest_of_another_tool_is_not_a_bundle(tmp_path, tiny_model):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"format": "dvc", "files": ["data.csv"]}))
    (folder / "data.csv").write_text("lot\n")
    sums = [f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in
            ("data.csv", "manifest.json")]  # fmt: skip
    (folder / "checksum.sha256").write_text("".join(sums))  # as `sha256sum` writes it
    with pytest.raises(FileExistsError, match="are not those of an mfgtx bundle"):
        save_bundle(folder, tiny_model, overwrite=True)
    assert sorted(p.name for p in folder.iterdir()) == ["checksum.sha256", "data.csv",
                                                        "manifest.json"]  # fmt: skip


def test_a_new_bundle_is_readable_as_the_umask_says(tmp_path, tiny_model) -> None:
    old = os.umask(0o022)
    try:
        path = save_bundle(tmp_path / "model", tiny_model)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755  # not the 0700 of a temporary folder


def test_remove_written_never_enters_a_bundle(tmp_path, tiny_model) -> None:
    folder = claim_folder(tmp_path / "ckpt")
    save_bundle(folder / "bundle", tiny_model)
    before = sorted(p.name for p in (folder / "bundle").iterdir())
    assert remove_written(folder) == [folder / "bundle"]
    assert sorted(p.name for p in (folder / "bundle").iterdir()) == before
