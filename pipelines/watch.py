"""Whether a job's bundle still holds: python pipelines/watch.py JOB.yaml [--last N]

A thin wrapper of ``mfgtx watch`` for schedulers that call scripts (cron, Airflow's
BashOperator), run after each ``score.py``: same arguments, same exit codes (0 still valid or
nothing to judge yet; 3 not valid; 2 bad input or config; 1 failure), logs on stderr, a JSON
summary as the last line of stdout. With ``alerts:`` in the job file, its findings are sent.
"""

import sys

from mfgtx.cli import main

if __name__ == "__main__":
    sys.exit(main(["watch", *sys.argv[1:]]))
