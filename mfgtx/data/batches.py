"""Evaluation batching that scores every window exactly once.

Many published time-series results built their test loader with ``drop_last=True`` and so
never scored the last windows. Here evaluation batches always keep the last partial batch,
and :func:`evaluation_loader` refuses ``drop_last`` and shuffling outright.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

__all__ = ["evaluation_batches", "evaluation_loader"]


def evaluation_batches(
    indices: Sequence[int] | np.ndarray, batch_size: int
) -> Iterator[np.ndarray]:
    """Consecutive batches of ``indices`` in order; the last one may be smaller.

    >>> [b.tolist() for b in evaluation_batches(range(7), 3)]
    [[0, 1, 2], [3, 4, 5], [6]]
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, found {batch_size!r}")
    idx = np.asarray(indices, dtype=np.int64)
    for a in range(0, len(idx), batch_size):
        yield idx[a : a + batch_size]


def evaluation_loader(
    dataset: Dataset,
    batch_size: int,
    *,
    num_workers: int = 0,
    drop_last: bool = False,
    shuffle: bool = False,
) -> DataLoader:
    """A :class:`~torch.utils.data.DataLoader` for scoring: in order, nothing dropped.

    ``drop_last`` and ``shuffle`` exist only to be refused with a clear error, so that code
    ported from a training loader cannot silently skip test windows.
    """
    if drop_last:
        raise ValueError(
            "drop_last=True would leave the last test windows unscored; evaluation scores "
            "every window once"
        )
    if shuffle:
        raise ValueError("shuffle=True has no place in evaluation; scores are kept in order")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, found {batch_size!r}")
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        drop_last=False,
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(0),
    )
