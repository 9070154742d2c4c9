"""The words a classifier's output rows use, where a plant user reads them.

A probability column is ``p_<class name>`` (``p_bad``, ``p_scratch``), never ``p_<index>``,
and ``decision`` is a word (``bad``/``good``, ``defect``/``good`` or the class name), never
1/0. A binary lot classifier's classes are ``good`` (label 0) and ``bad`` (label 1); a
multi-class one without names calls class ``k`` ``<target>_<k>`` (``grade_2``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["BAD", "DEFECT", "GOOD", "decision_words", "lot_class_names", "probability_column"]

GOOD, BAD, DEFECT = "good", "bad", "defect"


def probability_column(name: str) -> str:
    """The output column of the probability of class ``name``.

    Example:
        >>> probability_column("bad")
        'p_bad'
    """
    return f"p_{name}"


def lot_class_names(target: str, n_classes: int) -> tuple[str, ...]:
    """A lot classifier's class names: ``good``, ``bad`` (binary) or ``<target>_<k>``.

    Example:
        >>> lot_class_names("label", 2), lot_class_names("grade", 3)
        (('good', 'bad'), ('grade_0', 'grade_1', 'grade_2'))
    """
    if n_classes == 2:
        return (GOOD, BAD)
    return tuple(f"{target}_{k}" for k in range(n_classes))


def decision_words(
    decided: np.ndarray, words: Sequence[str], *, scored: np.ndarray | None = None
) -> np.ndarray:
    """``(N,)`` words of decisions ``decided`` (indices into ``words``); ``None`` where
    ``scored`` is False (a window that could not be scored has no decision).

    Example:
        >>> decision_words(np.array([1, 0]), ("good", "bad")).tolist()
        ['bad', 'good']
    """
    decided = np.asarray(decided)
    out = np.empty(len(decided), dtype=object)
    for i, k in enumerate(decided):
        out[i] = words[int(k)] if scored is None or scored[i] else None
    return out
