"""Record inspection results that arrived later: python pipelines/truth.py JOB.yaml --labels FILE

A thin wrapper of ``mfgtx truth`` for schedulers that call scripts (cron, Airflow's
BashOperator), run after each export of inspection results: same arguments, same exit codes
(0 ok, bad rows listed in the errors file; 2 bad input or config; 1 failure), logs on stderr,
a JSON summary as the last line of stdout.
"""

import sys

from mfgtx.cli import main

if __name__ == "__main__":
    sys.exit(main(["truth", *sys.argv[1:]]))
