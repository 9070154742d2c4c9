"""Path rules: a job never writes over what it reads or over a model bundle.

Checked before anything is written, for every output a command will write (score files,
the errors list, an evaluation report, a bundle and its checkpoints):

- an output is not one of the job's inputs (sensor and label files, images, a manifest, a
  SQLite source file), not inside an input folder (the next run would read it back), not
  the bundle's directory or inside it, and not inside any other bundle directory (a
  directory holding ``manifest.json`` and ``checksum.sha256``): the next ``train`` into it
  would delete it, and a file replaced there breaks the bundle;
- a bundle is not written over an input or into a folder that holds one, and not over a
  directory that holds files other than a bundle's (they would be deleted with it);
- two outputs of one job are different files, the errors list ends in ``.csv``, and an
  existing errors list is one mfgtx wrote (its header), never a user's CSV file;
- a SQL output table is not the table the job reads.

Paths are compared after resolving symbolic links, so a link cannot smuggle an input in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from mfgtx.jobs._schema import ConfigError

__all__ = ["ERRORS_HEADER", "PathRules", "bundle_root", "job_inputs"]

ERRORS_HEADER = "lot,file,line,column,reason"
_BUNDLE_MARKERS = ("manifest.json", "checksum.sha256")


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(path).expanduser().resolve(strict=False)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def bundle_root(path: str | os.PathLike[str]) -> Path | None:
    """The bundle directory ``path`` is, or lies inside, or ``None``."""
    p = _resolved(path)
    for candidate in (p, *p.parents):
        if all((candidate / m).is_file() for m in _BUNDLE_MARKERS):
            return candidate
    return None


class PathRules:
    """The inputs of one job, and the checks of its outputs against them.

    Args:
        file: the job file's name, for messages.
        inputs: ``(key, path)`` of every file or folder the job reads (missing ones are
            fine: a missing input is reported when it is read).
        bundle: the job's bundle directory, if any.
    """

    def __init__(
        self,
        file: str,
        inputs: Iterable[tuple[str, str | os.PathLike[str] | None]],
        bundle: str | os.PathLike[str] | None = None,
    ) -> None:
        self.file = file
        self.inputs = [(key, _resolved(p)) for key, p in inputs if p]
        self.bundle = None if bundle is None else _resolved(bundle)
        self._outputs: dict[Path, str] = {}

    def _fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.file}: {key}: {message}; nothing was written")

    def output(self, key: str, path: str | os.PathLike[str]) -> Path:
        """Check one output file; returns it resolved.

        Raises:
            ConfigError: naming the key and the rule it breaks.
        """
        p = _resolved(path)
        if p.is_dir():
            raise self._fail(key, f"{path} is a folder, not a file")
        for in_key, src in self.inputs:
            if p == src:
                raise self._fail(key, f"{path} is the job's input ({in_key}); choose another file")
            if src.is_dir() and _inside(p, src):
                raise self._fail(
                    key, f"{path} lies inside the input folder {src} ({in_key}), which the next "
                    "run would read back; write it elsewhere"
                )  # fmt: skip
        if self.bundle is not None and _inside(p, self.bundle):
            raise self._fail(key, f"{path} lies inside the bundle {self.bundle}")
        root = bundle_root(p.parent)
        if root is not None:
            raise self._fail(
                key, f"{path} lies inside the model bundle {root}, which holds only its own files"
            )  # fmt: skip
        if p in self._outputs:
            raise self._fail(
                key, f"{path} is also {self._outputs[p]}; give each output its own file"
            )
        self._outputs[p] = key
        return p

    def errors_file(self, key: str, path: str | os.PathLike[str]) -> Path:
        """:meth:`output` for an errors list: a ``.csv`` file, and if it exists one mfgtx
        wrote (its first line is :data:`ERRORS_HEADER`)."""
        p = self.output(key, path)
        if not p.name.lower().endswith(".csv"):
            raise self._fail(key, f"the error list is a .csv file, found {path}")
        if p.exists():
            try:
                with p.open("r", encoding="utf-8", errors="replace") as f:
                    first = f.readline().strip()
            except OSError as e:
                raise self._fail(key, f"{path} cannot be read ({e.strerror})") from e
            if first != ERRORS_HEADER:
                raise self._fail(
                    key, f"{path} exists and is not an mfgtx error list (its first line is "
                    f"{first[:60]!r}, expected {ERRORS_HEADER!r}); choose another file"
                )  # fmt: skip
        return p

    def bundle_dir(self, key: str, path: str | os.PathLike[str]) -> Path:
        """Check the directory a bundle (or its checkpoints) will be written to."""
        p = _resolved(path)
        for in_key, src in self.inputs:
            if _inside(p, src) or _inside(src, p):
                raise self._fail(
                    key, f"{path} and the input {src} ({in_key}) overlap; a bundle directory "
                    "is replaced whole, so keep inputs out of it"
                )  # fmt: skip
        if p in self._outputs:
            raise self._fail(key, f"{path} is also {self._outputs[p]}")
        if p.is_dir() and not p.is_symlink():
            if all((p / m).is_file() for m in _BUNDLE_MARKERS):
                from mfgtx.artifacts import bundle_files

                extra = sorted(set(os.listdir(p)) - bundle_files(p))
                if extra:
                    raise self._fail(
                        key, f"the bundle {path} also holds {extra[:5]}, which retraining "
                        "would delete; move them out first"
                    )  # fmt: skip
        self._outputs[p] = key
        return p


def _source_paths(key: str, source: object) -> list[tuple[str, str | None]]:
    if source is None:
        return []
    path = getattr(source, "path", None)
    if path is not None:
        return [(f"{key}.path", path)]
    url = getattr(source, "url", None) or ""
    if url.startswith("sqlite:///"):
        return [(f"{key}.url", url[len("sqlite:///") :])]
    return []


def job_inputs(config: object) -> list[tuple[str, str | None]]:
    """``(key, path)`` of every file or folder a job file names as an input."""
    data, score, images, ev = (
        getattr(config, k, None) for k in ("data", "score", "images", "evaluate")
    )
    out: list[tuple[str, str | None]] = []
    if data is not None:
        out += _source_paths("data.source", data.source)
        if data.labels is not None:
            out += _source_paths("data.labels.source", data.labels.source)
    if images is not None:
        out.append(("images.path", images.path))
        masks = getattr(images, "masks", None)
        if masks is not None and masks.path is not None:
            out.append(("images.masks.path", masks.path))
    if score is not None:
        out += _source_paths("score.source", score.source)
        out.append(("score.images", score.images))
    if ev is not None:
        out += _source_paths("evaluate.source", ev.source)
        if ev.truth is not None:
            out.append(("evaluate.truth.path", ev.truth.path))
    return out
