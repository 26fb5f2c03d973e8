"""Command line: `python -m sampler --out DIR/samples.csv --pid PID ...` (see docs/sampler.md).

Bad options or a missing target: one line on stderr, exit 2. Target or load generator gone, duration
reached, SIGTERM/SIGINT: the row in progress is finished, exit 0. samples.csv cannot be written (disk
full): one line, exit 5, the rows before it whole.
"""

from __future__ import annotations

import signal
import sys
import threading

from contract.csv_append import RunFileError
from contract.exit_codes import BAD_INPUT, DISK_ERROR, OK
from sampler.csv_out import OutputError
from sampler.loop import Sampler
from sampler.options import UsageError, parse
from sampler.procfs import raise_open_file_limit
from sampler.selection import TargetNotFound


def main(argv: list[str]) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        opts = parse(argv)
        raise_open_file_limit()
        sampler = Sampler(opts)
    except (UsageError, TargetNotFound, OutputError) as exc:
        print(f"sampler: error: {exc}", file=sys.stderr)
        return BAD_INPUT
    try:
        reason = sampler.run(stop)
    except RunFileError as exc:
        print(f"sampler: error: {exc}", file=sys.stderr)
        return DISK_ERROR
    finally:
        sampler.close()
    print(f"sampler: {reason}; {sampler.rows} rows in {opts.out}", file=sys.stderr)
    return OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
