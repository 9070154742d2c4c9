"""A failure of a library (pyarrow, pandas, SQLAlchemy, zlib, the OS) in plant words.

Readers wrap what they cannot read in :class:`~mfgtx.data.DataError` naming the file; the
reason comes from here, so that a message is never empty (``MemoryError()``,
``EOFError()`` and some pyarrow errors have no text) and never a bare class name.
"""

from __future__ import annotations

import csv
import gzip
import lzma
import zipfile
import zlib

__all__ = ["reason_of"]

_WORDS: tuple[tuple[type[BaseException], str], ...] = (
    (MemoryError, "it does not fit in memory"),
    (EOFError, "it ends early (a copy or download cut off?)"),
    (gzip.BadGzipFile, "its gzip data is damaged"),
    (zlib.error, "its compressed data is damaged"),
    (lzma.LZMAError, "its xz data is damaged"),
    (zipfile.BadZipFile, "its zip data is damaged"),
    (csv.Error, "it is not valid CSV"),
    (PermissionError, "permission denied"),
    (IsADirectoryError, "it is a folder, not a file"),
    (FileNotFoundError, "it is not there (moved or deleted while the job ran?)"),
)


def reason_of(err: BaseException) -> str:
    """``err`` as a short reason: its own text where it has one (the first line, without
    the library's ``C error:`` prefixes), plain words for its kind, never ``""``.

    >>> reason_of(EOFError())
    'it ends early (a copy or download cut off?)'
    >>> reason_of(OSError(5, "Input/output error", "/plant/export.csv"))
    'Input/output error'
    >>> reason_of(OSError(2, "No such file or directory", "/plant/export.csv"))
    'it is not there (moved or deleted while the job ran?)'
    >>> reason_of(KeyError())
    'KeyError (no reason given)'
    """
    text = ""
    if isinstance(err, OSError) and err.strerror:  # without "[Errno 2]" and the path
        text = err.strerror
    elif str(err).strip():
        text = str(err).strip().splitlines()[0].replace("Error tokenizing data. C error: ", "")
    if isinstance(err, OSError) and type(err) is OSError and "Invalid data stream" in text:
        return f"its bz2 data is damaged: {text}"  # what bz2 raises for bad data
    for kind, words in _WORDS:
        if isinstance(err, kind):
            ours = isinstance(err, OSError) and text == err.strerror  # said in our words
            return words if not text or ours else f"{words}: {text}"
    return text or f"{type(err).__name__} (no reason given)"
