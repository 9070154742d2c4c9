"""mfgtx: manufacturing analytics on Transformer models.

Subpackages: :mod:`mfgtx.nn` (the Transformer library).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
