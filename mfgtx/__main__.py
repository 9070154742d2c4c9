"""``python -m mfgtx``: the ``mfgtx`` command."""

import sys

from mfgtx.cli import main

if __name__ == "__main__":
    sys.exit(main())
