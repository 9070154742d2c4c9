"""CSV text read in bounded memory, each record with the physical line it starts on.

A CSV input is read as: the file -> decompressed when its first bytes say gzip, bz2, xz or
a one-file zip (:func:`open_input`, which stops at a limit on what it inflates to) -> text
in its encoding -> blocks of whole lines of about ``chunk_chars`` characters, no line longer
than ``max_line`` (:class:`_Lines`) -> records. Memory is bounded by the block whatever the
file's layout: a 2 GB file without a line break is refused after its first megabytes.

A block is parsed by pandas' C parser when it parses on its own and its lines add up (the
line of each record is then the block's first line plus the line breaks before it, quoted
ones included). Any other block (a quoted value running on past the block, a ragged row,
anything pandas refuses) is parsed by Python's :mod:`csv` reader, the reference: it reads
the block and the lines it needs after it, gives each record the physical line it starts
on, and names the line of whatever is wrong. Both read one dialect: ``"`` quotes a value,
``""`` is a quote inside one, a quote in the middle of a value is an ordinary character.

Values stay text (``str``; an empty value is missing); a row with fewer values than the
header is filled with missing values, empty values past the header's are dropped, and a
blank line (or one of delimiters only) is left out but keeps its line number.
"""

from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import io
import itertools
import lzma
import re
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from mfgtx.data._reasons import reason_of
from mfgtx.data.errors import DataError

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["MAX_LINE_CHARS", "csv_frames", "open_input"]

#: The longest line a CSV file of readings may hold (characters).
MAX_LINE_CHARS = 1 << 20

LINE = "_line"
_READ_CHARS = 1 << 20  # text decoded at a time
_BREAK = re.compile(r"\r\n|\r|\n")

#: First bytes of formats that are not CSV text, and what to call them.
_NOT_TEXT = {
    b"PAR1": "a Parquet file, not CSV text; name it .parquet or set source.format: parquet",
    b"\x28\xb5\x2f\xfd": "zstd-compressed",
    b"\x04\x22\x4d\x18": "lz4-compressed",
    b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive",
    b"Rar!\x1a\x07": "a RAR archive",
}


def _compression(head: bytes) -> str | None:
    """``gzip``, ``bz2``, ``xz``, ``zip`` or ``None`` (plain), from a file's first bytes."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    return None


def _mb(n: int) -> str:
    return f"{n / 2**20:g} MB" if n >= 2**20 else f"{n / 2**10:g} KB"


class _Inflating(io.RawIOBase):
    """The decompressed bytes of ``inner``, refused past ``limit`` bytes."""

    def __init__(
        self, inner: io.BufferedIOBase, name: str, kind: str, limit: int | None, setting: str
    ) -> None:
        self._inner, self._name, self._kind = inner, name, kind
        self._limit, self._setting = limit, setting
        self.inflated = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Buffer, /) -> int:
        n = self._inner.readinto(buffer)
        self.inflated += n
        if self._limit is not None and self.inflated > self._limit:
            raise DataError(
                f"{self._name}: its {self._kind} data inflates to more than "
                f"{_mb(self._limit)} ({self._setting}); it was not read further",
                file=self._name,
            )
        return n


@contextmanager
def open_input(
    data: Path | bytes,
    name: str,
    *,
    max_inflated: int | None = None,
    setting: str = "source.max_inflated_mb",
) -> Iterator[IO[bytes]]:
    """The bytes of a file (or of bytes held in memory), decompressed when its first bytes
    are gzip, bz2, xz or zip (of one file), whatever its name says.

    Raises:
        DataError: the decompressed data pass ``max_inflated`` bytes (``setting`` names where
            the limit is set), a zip holds other than one file, or the bytes are a format
            that is not CSV text (Parquet, zstd, 7-Zip...).
    """
    with ExitStack() as stack:
        raw: IO[bytes] = stack.enter_context(
            open(data, "rb") if isinstance(data, Path) else io.BytesIO(data)
        )
        head = raw.read(16)
        raw.seek(0)
        for magic, what in _NOT_TEXT.items():
            if head.startswith(magic):
                if "Parquet" not in what:
                    what += "; mfgtx reads CSV that is plain, gzip, bz2, xz or a zip of one file"
                raise DataError(f"{name} is {what}", file=name)
        kind = _compression(head)
        if kind is None:
            yield raw
            return
        inner: io.BufferedIOBase
        if kind == "gzip":
            inner = gzip.GzipFile(fileobj=raw, mode="rb")
        elif kind == "bz2":
            inner = bz2.BZ2File(raw)
        elif kind == "xz":
            inner = lzma.LZMAFile(raw)
        else:
            inner = _zip_member(stack.enter_context(zipfile.ZipFile(raw)), name, max_inflated)
        stack.enter_context(inner)
        yield io.BufferedReader(_Inflating(inner, name, kind, max_inflated, setting), 1 << 16)


def _zip_member(archive: zipfile.ZipFile, name: str, limit: int | None) -> zipfile.ZipExtFile:
    files = [i for i in archive.infolist() if not i.is_dir()]
    if len(files) != 1:
        raise DataError(
            f"{name} is a zip of {len(files)} files; a CSV source reads a zip of one CSV file "
            "(unzip it, or point source.path at the folder)",
            file=name,
        )
    if limit is not None and files[0].file_size > limit:  # refused before inflating
        raise DataError(
            f"{name}: {files[0].filename} inflates to {_mb(files[0].file_size)}, more than "
            f"{_mb(limit)}; it was not read",
            file=name,
        )
    # typeshed types ZipFile.open as IO[bytes]; opened for reading it is a ZipExtFile
    return cast(zipfile.ZipExtFile, archive.open(files[0]))


def _breaks(text: str) -> int:
    """Line breaks in ``text`` (``\\r\\n``, ``\\r`` or ``\\n``, as the csv reader counts)."""
    n = text.count("\n")
    return n if "\r" not in text else n + text.count("\r") - text.count("\r\n")


class _LineTooLong(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _Lines:
    """The physical lines of a text stream, one at a time or as blocks of whole lines,
    never holding more than a block and a line. ``line``: the number of the next line."""

    def __init__(self, text: IO[str], max_line: int) -> None:
        self._text, self._max = text, max_line
        self._buf, self._pos, self._eof = "", 0, False
        self.line = 1

    def _more(self) -> bool:
        if not self._eof:
            more = self._text.read(_READ_CHARS)
            if more:
                self._buf = self._buf[self._pos :] + more
                self._pos = 0
                return True
            self._eof = True
        return False

    def _check(self, line: int) -> None:
        if len(self._buf) - self._pos > self._max:
            raise _LineTooLong(line)

    def readline(self) -> str:
        """The next line with its line break (``""`` at the end)."""
        while True:
            m = _BREAK.search(self._buf, self._pos)
            # a '\r' at the end of the text read so far may be the start of '\r\n'
            if m and (m.end() < len(self._buf) or m.group() != "\r" or self._eof):
                end = m.end()
                break
            self._check(self.line)
            if not self._more():
                end = len(self._buf)
                break
        line = self._buf[self._pos : end]
        self._pos = end
        self.line += bool(line)
        return line

    def block(self, size: int, most: int) -> tuple[str, int, int]:
        """Whole lines, about ``size`` characters or ``most`` lines (whichever comes first;
        a little more, up to the text read): ``(text, first line, lines)``."""
        first, pieces, chars, lines = self.line, [], 0, 0
        while chars < size and lines < most:
            if self._pos >= len(self._buf) and not self._more():
                break
            buf = self._buf
            stop = len(buf) - 1 if buf.endswith("\r") and not self._eof else len(buf)
            end = max(buf.rfind("\n", self._pos, stop), buf.rfind("\r", self._pos, stop)) + 1
            if end <= self._pos:  # no whole line in the text read so far
                self._check(first + lines)
                if self._more():
                    continue
                end = len(self._buf)  # the last line, without a line break
            piece = self._buf[self._pos : end]
            self._pos = end
            pieces.append(piece)
            chars += len(piece)
            lines += _breaks(piece) + (not piece.endswith(("\n", "\r")))
        self._check(first + lines)
        self.line = first + lines
        return "".join(pieces), first, lines


def _codec(encoding: str) -> str:
    """``encoding``, with a UTF-8 byte-order mark skipped."""
    return "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding


def csv_frames(
    data: Path | bytes,
    name: str,
    *,
    sep: str,
    encoding: str,
    chunk_rows: int,
    chunk_chars: int,
    max_inflated: int | None = None,
    setting: str = "source.max_inflated_mb",
    dialect: str = "",
    max_line: int = MAX_LINE_CHARS,
) -> Iterator[pd.DataFrame]:
    """Frames of at most ``chunk_rows`` records of a CSV file (see the module docstring):
    the header's columns as text, and ``_line``, the physical line each record starts on.

    ``dialect``: the delimiter in words (``values separated by ';' (found in its header
    line)``), for messages about a row that does not fit it.

    Raises:
        DataError: naming ``name`` and, where it is known, the line: the file is empty, a
            line is longer than ``max_line``, the text is not ``encoding``, a record holds
            more values than the header, a column name appears twice, the data inflate past
            ``max_inflated`` bytes, or the file cannot be read (damaged, cut off...).
    """
    lines: _Lines | None = None
    try:
        with open_input(data, name, max_inflated=max_inflated, setting=setting) as binary:
            text = io.TextIOWrapper(binary, encoding=_codec(encoding), newline="")
            lines = _Lines(text, max_line)
            header = _header(lines, name, sep)
            n = len(header)
            while True:
                block, first, count = lines.block(chunk_chars, chunk_rows)
                if not count:
                    break
                frame = _parse_fast(block, first, count, sep, n)
                if frame is None:
                    frame = _parse_exact(block, first, count, lines, sep, n, name, dialect)
                del block
                kept = frame.iloc[:, :n].notna().any(axis=1).to_numpy()
                if not kept.all():  # blank lines: left out, their numbers kept
                    frame = frame[kept]
                frame.columns = [*header, LINE]
                for i in range(0, len(frame), chunk_rows):
                    yield frame.iloc[i : i + chunk_rows]
    except _LineTooLong as e:
        raise DataError(
            f"{name}: line {e.line} is longer than {_mb(max_line)}; this is not a CSV of "
            "readings (a damaged or binary file?)",
            file=name,
            line=e.line,
        ) from None
    except UnicodeDecodeError as e:
        line, byte = _undecodable(data, name, encoding, max_inflated) or (None, e.object[e.start])
        where = f" on line {line}" if line is not None else ""
        raise DataError(
            f"{name} is not {encoding} text (byte 0x{byte:02x}{where}: {e.reason}); set "
            "source.encoding (Windows exports are often cp1252)",
            file=name,
            line=line,
        ) from None
    except DataError:
        raise
    except Exception as e:
        at = lines.line if lines is not None and lines.line > 1 else None
        where = f" at line {at}" if at is not None else ""
        raise DataError(f"cannot read {name}{where}: {reason_of(e)}", file=name, line=at) from e


def _header(lines: _Lines, name: str, sep: str) -> list[str]:
    """The column names of the first record, checked."""
    reader = csv.reader(iter(lines.readline, ""), delimiter=sep)
    try:
        names = next(reader)
    except StopIteration:
        raise DataError(f"{name} is empty: no header line", file=name) from None
    except csv.Error as e:
        raise DataError(f"{name}: line 1 (the header): {reason_of(e)}", file=name, line=1) from e
    if not any(names):
        raise DataError(
            f"{name}: line 1 is blank; the first line must name the columns", file=name, line=1
        )
    names[0] = names[0].lstrip("\ufeff")
    first: dict[str, int] = {}
    for i, c in enumerate(names, start=1):
        if c in first and c:
            raise DataError(
                f"{name}: column {c!r} appears twice in the header (columns {first[c]} and "
                f"{i}); rename one",
                column=c,
                file=name,
                line=1,
                problem="column name twice",
                found=c,
                expected="each column name once",
            )
        first.setdefault(c, i)
    return [c or f"Unnamed: {i}" for i, c in enumerate(names)]  # pandas' names


def _parse_fast(block: str, first: int, count: int, sep: str, n: int) -> pd.DataFrame | None:
    """The block parsed by pandas, or ``None`` where the reference reader must read it."""
    try:
        frame = pd.read_csv(
            io.BytesIO(block.encode("utf-8", "surrogatepass")),  # pandas reads bytes faster
            encoding="utf-8",
            encoding_errors="surrogatepass",
            sep=sep,
            header=None,
            names=range(n + 1),  # a value past the header's shows in column n
            index_col=False,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            skip_blank_lines=False,
            quotechar='"',
            doublequote=True,
            engine="c",
        )
    except MemoryError:
        raise
    except Exception:  # a record running past the block, a ragged row: read exactly
        return None
    if frame.pop(n).notna().any():
        return None
    if len(frame) == count:  # no line break inside a value: one line per record
        frame[LINE] = np.arange(first, first + count)
        return frame
    inside = np.zeros(len(frame), dtype=np.int64)  # line breaks inside each record's values
    for c in range(n):
        values = frame[c]
        if values.str.contains("[\r\n]", regex=True, na=False).any():
            inside += values.str.count(_BREAK.pattern).fillna(0).to_numpy(dtype=np.int64)
    if len(frame) + int(inside.sum()) != count:
        return None
    frame[LINE] = first + np.arange(len(frame)) + np.cumsum(inside) - inside
    return frame


def _parse_exact(
    block: str, first: int, count: int, lines: _Lines, sep: str, n: int, name: str, dialect: str
) -> pd.DataFrame:
    """The block parsed by the :mod:`csv` reader, with the lines after it that its last
    record needs; errors name the physical line."""
    source = itertools.chain(io.StringIO(block, newline=""), iter(lines.readline, ""))
    reader = csv.reader(source, delimiter=sep)
    rows: list[list[str]] = []
    starts: list[int] = []
    done = 0  # lines of the block read
    while done < count:
        start = first + done
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            reason = str(e)
            if "field limit" in reason:
                reason = (
                    f"a value longer than {csv.field_size_limit()} characters starts here "
                    "(a quote opened on this line that is never closed?)"
                )
            raise DataError(f"{name}: line {start}: {reason}", file=name, line=start) from e
        done = reader.line_num
        if not any(row):
            continue
        if len(row) < n:
            row += [""] * (n - len(row))
        elif len(row) > n:
            if any(row[n:]):
                raise DataError(
                    f"cannot read {name} as CSV with {dialect or repr(sep)}: line {start} "
                    f"holds {len(row)} values, the header {n}; set source.delimiter if that "
                    "is not the file's",
                    file=name,
                    line=start,
                )
            row = row[:n]
        rows.append(row)
        starts.append(start)
    frame = pd.DataFrame(rows, columns=range(n), dtype="str")
    frame = frame.mask(frame == "")
    frame[LINE] = np.asarray(starts, dtype=np.int64)
    return frame


def _undecodable(
    data: Path | bytes, name: str, encoding: str, max_inflated: int | None
) -> tuple[int, int] | None:
    """``(line, byte)`` of the first bytes that are not ``encoding`` text, read again."""
    decoder = codecs.getincrementaldecoder(_codec(encoding))()
    breaks, cr = 0, False
    try:
        with open_input(data, name, max_inflated=max_inflated) as f:
            while part := f.read(1 << 20):
                try:
                    text = decoder.decode(part)
                except UnicodeDecodeError as e:
                    before = e.object[: e.start].decode(encoding, errors="replace")
                    return 1 + breaks + _breaks(before) - (cr and before[:1] == "\n"), int(
                        e.object[e.start]
                    )
                breaks += _breaks(text) - (cr and text[:1] == "\n")
                cr = text.endswith("\r") or (cr and not text)
    except Exception:  # the first pass's message stands without a line
        return None
    return None
