"""`python -m simgateway.mcp_stdio [--mcp-tools ...] [--mcp-tool-ms MS] [--stats-dir DIR]`: the simulator's
MCP server (simgateway/mcp_server.py, the same tools and knobs as `/mcp`) over stdio, one process per
client, as MCP's stdio transport has it: newline-delimited JSON-RPC on stdin and stdout, ended when its
stdin closes (or by SIGTERM).

The tests' truth is its counts: at its end each process writes its ledger (the JSON of GET /v1/sim/mcp,
`tools_call_ms` timed from a call's dispatch to its result) to DIR/PID.json. `--exit-after-calls N` makes
it a server that dies mid-run: the call after N answered ones gets no answer, the process exits 3.
`--mcp-session-mib M`: the process (its one session) holds M MiB, resident from its start to its end, the
capacity study's truth over stdio. HTTP-only knobs (--mcp-json-response, --mcp-idle-timeout,
--mcp-initialize invalid) do nothing here.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import anyio
from mcp.server.stdio import stdio_server

from simgateway import memory
from simgateway.knobs import _POSITIVE_INT, build_parser, knobs_of
from simgateway.mcp_server import SimMcp

EXIT_MID_RUN = 3  # the exit code of --exit-after-calls


class StdioMcp:
    """One stdio server process: the simulated server, its counts written where the test reads them."""

    def __init__(self, sim: SimMcp, stats_dir: Path | None, exit_after: int | None) -> None:
        self.sim = sim
        self.stats_dir = stats_dir
        self.exit_after = exit_after
        self.held = memory.allocate_touched(sim.knobs.mcp_session_mib)  # the session's memory: the process's
        sim.server.middleware.append(self.timed)

    async def timed(self, ctx, call_next):
        """Each tools/call timed into the ledger; with --exit-after-calls, the process ends unanswered."""
        if ctx.method != "tools/call":
            return await call_next(ctx)
        if self.exit_after is not None and sum(self.sim.ledger.tool_calls.values()) >= self.exit_after:
            self.end(EXIT_MID_RUN)
        started = time.perf_counter()
        try:
            return await call_next(ctx)
        finally:
            self.sim.ledger.call_ms.append((time.perf_counter() - started) * 1000.0)

    async def serve(self) -> None:
        server = self.sim.server
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    def write_stats(self) -> None:
        if self.stats_dir is None:
            return
        path = self.stats_dir / f"{os.getpid()}.json"
        partial = path.with_suffix(".part")
        partial.write_text(json.dumps(self.sim.ledger.as_json()))
        partial.replace(path)  # whole or absent: a reader never sees half a file

    def end(self, code: int) -> None:
        """The counts written, then the process gone at once (from a signal or mid-call: no unwinding
        that could wait on the stdin reader's thread)."""
        self.write_stats()
        os._exit(code)


def main(argv: list[str] | None = None) -> None:
    parser = build_parser(prog="python -m simgateway.mcp_stdio", listens=False)
    parser.add_argument("--stats-dir", type=Path, default=None, help="write the counts to DIR/PID.json")
    parser.add_argument("--exit-after-calls", type=_POSITIVE_INT, default=None)
    values = vars(parser.parse_args(argv))
    stats_dir, exit_after = values.pop("stats_dir"), values.pop("exit_after_calls")
    stdio = StdioMcp(SimMcp(knobs_of(values, parser)), stats_dir, exit_after)
    signal.signal(signal.SIGTERM, lambda *_: stdio.end(0))
    anyio.run(stdio.serve)
    stdio.end(0)  # stdin closed: the client ended the session


if __name__ == "__main__":
    main(sys.argv[1:])
