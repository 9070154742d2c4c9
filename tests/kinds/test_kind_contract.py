"""What every registered kind must meet (the kinds' ``check_estimator``)."""

from __future__ import annotations

import pytest

import mfgtx.kinds  # noqa: F401  (registers mfgtx's kinds)
from mfgtx.explain.dispatch import _DELETERS, _EXPLAINERS
from mfgtx.kinds import KINDS


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_model_class_of_a_kind_is_explained(name: str) -> None:
    for model_class in KINDS[name].model_classes().values():
        assert callable(_EXPLAINERS.find(model_class))
        assert callable(_DELETERS.find(model_class))


def test_a_class_that_names_no_explainer_is_refused() -> None:
    class Bare:
        explained_as = "no such module"

    with pytest.raises(TypeError, match="no attention maps for Bare.*'no such module'"):
        _EXPLAINERS.find(Bare)
