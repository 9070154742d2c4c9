"""A toy fourth model kind, defined outside mfgtx as a plugin would be (tests only).

It proves that a new model is one package: its model (:mod:`.model`), its job-file section
(:mod:`.section`), the input specification its bundles save (:mod:`.spec`) and its
:class:`~mfgtx.kinds.Kind` (:mod:`.kind`), registered when this package is imported, with
no change to mfgtx. ``mfgtx`` commands in another process find it through the environment
variable ``MFGTX_KINDS=tests.kinds.toy``.
"""

from __future__ import annotations

from tests.kinds.toy.kind import TOY, ToyKind, ToyPredictor
from tests.kinds.toy.model import ToyConfig, ToyModel
from tests.kinds.toy.section import ToySection
from tests.kinds.toy.spec import ToySpec

__all__ = ["TOY", "ToyConfig", "ToyKind", "ToyModel", "ToyPredictor", "ToySection", "ToySpec"]
