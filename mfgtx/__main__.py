"""``python -m mfgtx``: the ``mfgtx`` command."""

import sys

from mfgtx.cli import main

sys.exit(main())
