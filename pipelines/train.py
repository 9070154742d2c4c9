"""Train a model and write its bundle.

Usage: python pipelines/train.py sensor|forecast|vit JOB.yaml [--set K=V] [--resume]

A thin wrapper of ``mfgtx train`` for schedulers that call scripts (cron, Airflow's
BashOperator): same arguments, same exit codes (0 ok, 2 bad input or config, 1 failure),
logs on stderr, a JSON summary as the last line of stdout.
"""

import sys

from mfgtx.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
