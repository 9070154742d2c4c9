"""Copy a CSV or Parquet file into a SQL table, to try the SQL inputs of a job.

Usage: python pipelines/load_sqlite.py sample_data/sensors.csv runs/plant.db sensors
(the second argument is a SQLite file, or any SQLAlchemy URL). A table this script created
before is replaced; any other existing table is refused (exit 2) and left as it is.
"""

import argparse
import sys

from mfgtx.data import DataError
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobs.copy_sql import copy_to_sql


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", help="CSV or Parquet file")
    p.add_argument("database", help="SQLite file or SQLAlchemy URL")
    p.add_argument("table", help="table to (re)create")
    args = p.parse_args(argv)
    url = args.database if "://" in args.database else f"sqlite:///{args.database}"
    try:
        n = copy_to_sql(SourceSection(path=args.file), url, args.table, replace=True)
    except (ValueError, DataError) as e:
        sys.stderr.write(f"load_sqlite.py: error: {e}\n")
        return 2
    sys.stdout.write(f"{n} rows copied into {args.table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
