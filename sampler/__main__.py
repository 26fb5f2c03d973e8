"""Command line: `python -m sampler --out DIR/samples.csv --pid PID ...`, or `python -m sampler serve ...`
on the gateway's host (see docs/sampler.md, docs/multi-host.md).

Bad options or a missing target: one line on stderr, exit 2. Target or load generator gone, duration
reached, SIGTERM/SIGINT: the row in progress is finished, exit 0 (the service answers until a signal).
samples.csv cannot be written (disk full): one line, exit 5, the rows before it whole.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING

from contract.csv_append import RunFileError
from contract.exit_codes import BAD_INPUT, DISK_ERROR, OK
from contract.redact import redact
from sampler.csv_out import OutputError
from sampler.loop import Sampler
from sampler.options import UsageError, parse
from sampler.procfs import raise_open_file_limit
from sampler.row_buffer import RowBuffer
from sampler.selection import TargetNotFound
from sampler.serve_options import parse_serve

if TYPE_CHECKING:
    from sampler.serve import ServiceState


def main(argv: list[str]) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if argv[:1] == ["serve"]:
        return main_serve(argv[1:], stop)
    try:
        opts = parse(argv)
        raise_open_file_limit()
        sampler = Sampler(opts)
    except (UsageError, TargetNotFound, OutputError) as exc:
        print(f"sampler: error: {redact(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    except RunFileError as exc:  # its files could not even be started (disk full)
        print(f"sampler: error: {exc}", file=sys.stderr)
        return DISK_ERROR
    try:
        reason = sampler.run(stop)
    except RunFileError as exc:
        print(f"sampler: error: {redact(str(exc))}", file=sys.stderr)
        return DISK_ERROR
    except TargetNotFound as exc:  # --wait-for-target's first match fell in unrelated trees
        print(f"sampler: error: {redact(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    finally:
        sampler.close()
    print(f"sampler: {reason}; {sampler.rows} rows in {opts.out}", file=sys.stderr)
    return OK


def main_serve(argv: list[str], stop: threading.Event) -> int:
    from sampler.serve import ServiceState, serve  # http.server: not on a run's start (~20 ms)

    try:
        opts = parse_serve(argv)
        raise_open_file_limit()
        rows = RowBuffer(opts.keep_rows)
        sampler = Sampler(opts.sampler, sink=rows)
        state = ServiceState(opts.token, rows, sampler.host_label, opts.sampler.interval)
        state.step_reading = sampler.step_reading
        server = _listen(state, opts.bind, opts.port)
    except (UsageError, TargetNotFound) as exc:
        print(f"sampler serve: error: {redact(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    host, port = server.server_address[:2]
    print(f"sampler serve: listening on http://{host}:{port} as host {state.host!r}", file=sys.stderr)
    sys.stderr.flush()
    try:
        reason = serve(sampler, state, server, stop)
    finally:
        sampler.close()
    print(f"sampler serve: {reason}; {sampler.rows} rows taken", file=sys.stderr)
    return OK


def _listen(state: ServiceState, bind: str, port: int):
    from sampler.serve import make_server

    try:
        return make_server(state, bind, port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {bind}:{port}: {exc.strerror or exc}") from None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
