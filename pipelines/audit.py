"""Audit a split configuration for leakage: python pipelines/audit.py JOB.yaml

A thin wrapper of ``mfgtx audit`` for schedulers that call scripts (cron, Airflow's
BashOperator): same arguments, same exit codes (0 ok, 2 bad input or config, 1 failure),
logs on stderr, a JSON summary as the last line of stdout.
"""

import sys

from mfgtx.cli import main

if __name__ == "__main__":
    sys.exit(main(["audit", *sys.argv[1:]]))
