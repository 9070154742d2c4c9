"""A compressed CSV upload is read up to the dashboard's limit, in this process's memory."""

from __future__ import annotations

import gzip
import sys

import pytest

from mfgtx.data import DataError

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))
from _settings import MAX_CSV_INFLATED_MB, MAX_CSV_MB
from _tables import read_csv

FORMAT = {"delimiter": "auto", "decimal": ".", "encoding": "utf-8"}


def test_a_compressed_upload_stops_at_the_dashboard_limit() -> None:
    assert MAX_CSV_INFLATED_MB == MAX_CSV_MB  # a gzip holds no more than a plain upload
    row = b"A," + b"1" * 4094 + b"\n"
    bomb = gzip.compress(b"lot,temp\n" + row * ((MAX_CSV_INFLATED_MB + 1) << 8), 1)
    assert len(bomb) < 1 << 20
    with pytest.raises(DataError, match=rf"upload.csv.gz: .*more than {MAX_CSV_MB} MB \(the "
                       r"limit for an upload\)"):  # fmt: skip
        read_csv(bomb, "upload.csv.gz", FORMAT, ("lot",))
    frame = read_csv(gzip.compress(b"lot,temp\nA,1.5\n"), "upload.csv.gz", FORMAT, ("lot",))
    assert frame["temp"].tolist() == [1.5]


def test_a_damaged_upload_is_named_not_an_internal_error() -> None:
    data = gzip.compress(b"lot,temp\n" + b"A,1.5\n" * 5000)[:-30]
    with pytest.raises(DataError, match=r"upload.csv.gz.*ends early"):
        read_csv(data, "upload.csv.gz", FORMAT, ("lot",))
