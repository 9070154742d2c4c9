"""mfgtx: manufacturing analytics on Transformer models.

Subpackages: :mod:`mfgtx.nn` (the Transformer library), :mod:`mfgtx.data` (sensor tables and
windows), :mod:`mfgtx.split` (leakage-safe splitting and its audit), :mod:`mfgtx.train` (the
training engine).
"""

import logging

__version__ = "0.1.0"

__all__ = ["__version__"]

# A library never configures logging; applications (the CLI, the dashboard) do.
logging.getLogger(__name__).addHandler(logging.NullHandler())
