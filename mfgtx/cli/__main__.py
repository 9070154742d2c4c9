"""``python -m mfgtx.cli``: the ``mfgtx`` command, as when the command was one module."""

import sys

from mfgtx.cli import main

if __name__ == "__main__":
    sys.exit(main())
