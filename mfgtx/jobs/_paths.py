"""Path rules: a job never writes over what it reads, over a model bundle, or over anything
that mfgtx did not write.

Checked before any work starts (before a model is trained or a bundle read), for every output
a command will write (score files, the errors list, an evaluation report, an ONNX export, a
bundle and its checkpoints, a SQL table):

- an output is not one of the job's inputs (sensor and label files, images, a manifest, a
  SQLite source file), not inside an input folder (the next run would read it back), not
  the bundle's directory or inside it, and not inside any other bundle directory (a
  directory holding ``manifest.json`` and ``checksum.sha256``): the next ``train`` into it
  would delete it, and a file replaced there breaks the bundle;
- an existing output file is one mfgtx wrote and nobody changed since (its record matches,
  :mod:`mfgtx._files`), never a user's file, and its lock file ``<output>.lock`` holds
  nothing but a process id;
- a bundle is not written over an input or into a folder that holds one, and replaces only
  an empty folder or a bundle that holds nothing but its own files;
- the checkpoint folder does not overlap the inputs or the bundle, and the checkpoints in it
  are mfgtx's (files of others there are kept when the folder is cleaned up);
- two outputs of one job are different files, and the errors list ends in ``.csv``;
- a SQL output table is not a table the job reads (names compared as the database resolves
  them), and if it exists mfgtx created it (:func:`mfgtx.jobs._sql.table_problem`).

Paths are compared after resolving symbolic links, so a link cannot smuggle an input in.
Messages name a path as the user wrote it (``~/results/scores.csv``), followed by where that
is when it differs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mfgtx._files import expand_path, replace_problem
from mfgtx.jobfile._schema import ConfigError

__all__ = ["PathRules", "bundle_root", "expand_argument", "job_inputs"]

_BUNDLE_MARKERS = ("manifest.json", "checksum.sha256")
_LOCK_TEXT = re.compile(rb"\s*\d*\s*")


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(path).resolve(strict=False)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def bundle_root(path: str | os.PathLike[str]) -> Path | None:
    """The bundle directory ``path`` is, or lies inside, or ``None``."""
    p = _resolved(path)
    for candidate in (p, *p.parents):
        if all((candidate / m).is_file() for m in _BUNDLE_MARKERS):
            return candidate
    return None


def expand_argument(command: str, key: str, text: str) -> str:
    """A path given on the command line, expanded as a job file's paths are
    (:func:`mfgtx._files.expand_path`).

    Raises:
        ConfigError: naming the command and the argument (an unset variable).
    """
    try:
        return expand_path(text)
    except ValueError as e:
        raise ConfigError(f"{command}: {key}: {e}") from None


def _lock_problem(lock: Path) -> str | None:
    """Why ``lock`` is not a lock file an mfgtx job left (which holds a process id)."""
    if not os.path.lexists(lock):
        return None
    if lock.is_symlink() or not lock.is_file():
        return "is not a plain file"
    try:
        with lock.open("rb") as f:
            head = f.read(65)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if len(head) > 64 or not _LOCK_TEXT.fullmatch(head):
        return "holds something other than the process id of an mfgtx job"
    return None


class PathRules:
    """The inputs of one job, and the checks of its outputs against them and against what
    exists already.

    Args:
        file: the job file's name, for messages.
        inputs: ``(key, path)`` of every file or folder the job reads (missing ones are
            fine: a missing input is reported when it is read).
        bundle: the job's bundle directory, if any.
        written: ``{path: as the user wrote it}`` for messages
            (:attr:`~mfgtx.jobfile.config.JobConfig.paths_as_written`).
    """

    def __init__(
        self,
        file: str,
        inputs: Iterable[tuple[str, str | os.PathLike[str] | None]],
        bundle: str | os.PathLike[str] | None = None,
        *,
        written: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> None:
        self.file = file
        self.inputs = [(key, _resolved(p)) for key, p in inputs if p]
        self.bundle = None if bundle is None else _resolved(bundle)
        self.written = {os.path.normpath(k): v for k, v in dict(written).items()}
        self._outputs: dict[Path, str] = {}

    @classmethod
    def of(cls, config: Any, *, bundle: str | os.PathLike[str] | None = None) -> PathRules:
        """The rules of a job file (a :class:`~mfgtx.jobfile.config.JobConfig`): its inputs,
        and its paths as the user wrote them."""
        return cls(
            config.source_file,
            job_inputs(config),
            bundle,
            written=getattr(config, "paths_as_written", ()),
        )

    def shown(self, path: str | os.PathLike[str]) -> str:
        """``path`` as the user wrote it, and where that is when it differs."""
        text = os.fspath(path)
        written = self.written.get(os.path.normpath(text))
        return text if written is None or written == text else f"{written} ({text})"

    def _fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.file}: {key}: {message}; nothing was written")

    def _check_inputs(self, key: str, path: str | os.PathLike[str], p: Path) -> None:
        for in_key, src in self.inputs:
            if p == src:
                raise self._fail(
                    key, f"{self.shown(path)} is the job's input ({in_key}); choose another file"
                )
            if src.is_dir() and _inside(p, src):
                raise self._fail(
                    key, f"{self.shown(path)} lies inside the input folder {src} ({in_key}), "
                    "which the next run would read back; write it elsewhere"
                )  # fmt: skip

    def _check_lock(self, key: str, path: str | os.PathLike[str]) -> None:
        lock = Path(f"{os.fspath(path)}.lock")
        problem = _lock_problem(lock)
        if problem is not None:
            raise self._fail(
                key, f"{self.shown(path)}: its lock file {lock} {problem}, which mfgtx would "
                "replace; move it away"
            )  # fmt: skip

    def _claim(self, key: str, path: str | os.PathLike[str], p: Path) -> None:
        if p in self._outputs:
            raise self._fail(
                key,
                f"{self.shown(path)} is also {self._outputs[p]}; give each output its own file",
            )
        self._outputs[p] = key

    def output(self, key: str, path: str | os.PathLike[str]) -> Path:
        """Check one output file; returns it resolved.

        Raises:
            ConfigError: naming the key, the path as written and the rule it breaks.
        """
        p = _resolved(path)
        if p.is_dir():
            raise self._fail(key, f"{self.shown(path)} is a folder, not a file")
        self._check_inputs(key, path, p)
        if self.bundle is not None and _inside(p, self.bundle):
            raise self._fail(key, f"{self.shown(path)} lies inside the bundle {self.bundle}")
        root = bundle_root(p.parent)
        if root is not None:
            raise self._fail(
                key, f"{self.shown(path)} lies inside the model bundle {root}, which holds only "
                "its own files"
            )  # fmt: skip
        problem = replace_problem(path)
        if problem is not None:
            raise self._fail(
                key, f"{self.shown(path)} {problem}; choose another file or move it away"
            )
        self._check_lock(key, path)
        self._claim(key, path, p)
        return p

    def errors_file(self, key: str, path: str | os.PathLike[str]) -> Path:
        """:meth:`output` for an errors list, a ``.csv`` file."""
        if not os.fspath(path).lower().endswith(".csv"):
            raise self._fail(key, f"the error list is a .csv file, found {self.shown(path)}")
        return self.output(key, path)

    def bundle_dir(self, key: str, path: str | os.PathLike[str]) -> Path:
        """Check the directory a bundle will be written to: it may replace only an empty
        folder or a bundle that holds nothing but its own files."""
        from mfgtx.artifacts._atomic import bundle_problem

        p = _resolved(path)
        for in_key, src in self.inputs:
            if _inside(p, src) or _inside(src, p):
                raise self._fail(
                    key, f"{self.shown(path)} and the input {src} ({in_key}) overlap; a bundle "
                    "directory is replaced whole, so keep inputs out of it"
                )  # fmt: skip
        root = bundle_root(p.parent)
        if root is not None:
            raise self._fail(key, f"{self.shown(path)} lies inside the model bundle {root}")
        problem = bundle_problem(path)
        if problem is not None:
            raise self._fail(
                key, f"{self.shown(path)} cannot be replaced by the new bundle: {problem}"
            )
        self._check_lock(key, path)
        self._claim(key, path, p)
        return p

    def checkpoint_dir(self, key: str, path: str | os.PathLike[str]) -> Path:
        """Check the folder training checkpoints go to: not an input, a bundle or a file,
        and any checkpoint already in it (``*.ckpt``, in it or one folder down) is mfgtx's."""
        p = _resolved(path)
        for in_key, src in self.inputs:
            if _inside(p, src) or _inside(src, p):
                raise self._fail(
                    key, f"{self.shown(path)} and the input {src} ({in_key}) overlap; keep "
                    "checkpoints apart from the data"
                )  # fmt: skip
        for out, out_key in self._outputs.items():
            if _inside(p, out) or _inside(out, p):
                raise self._fail(
                    key, f"{self.shown(path)} and {out_key} ({out}) overlap; give the "
                    "checkpoints a folder of their own"
                )  # fmt: skip
        root = bundle_root(p)
        if root is not None:
            raise self._fail(key, f"{self.shown(path)} lies inside the model bundle {root}")
        if os.path.lexists(p) and not p.is_dir():
            raise self._fail(key, f"{self.shown(path)} is a file, not a folder")
        if p.is_dir():
            for ckpt in sorted([*p.glob("*.ckpt"), *p.glob("*/*.ckpt")]):
                problem = replace_problem(ckpt)
                if problem is not None:
                    raise self._fail(
                        key, f"{self.shown(path)} holds {ckpt.relative_to(p)}, which {problem}; "
                        "give the checkpoints another folder or move it away"
                    )  # fmt: skip
        self._claim(key, path, p)
        return p

    def sql_output(
        self, key: str, url: str, table: str, reads: Iterable[tuple[str, Any]] = ()
    ) -> None:
        """Check a SQL output table: not one of ``reads`` (``(key, source)`` with ``url`` and
        ``table``), and if it exists one mfgtx created."""
        from mfgtx.jobfile._sql import same_table
        from mfgtx.jobs._sql import table_problem

        for in_key, src in reads:
            src_url, src_table = getattr(src, "url", None), getattr(src, "table", None)
            if src_url and src_table and same_table(url, table, src_url, src_table):
                raise self._fail(
                    key, f"{table} is the table the job reads ({in_key}.table: {src_table}); "
                    "write the scores to another table"
                )  # fmt: skip
        problem = table_problem(url, table)
        if problem is not None:
            raise self._fail(key, f"{table} {problem}")


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
