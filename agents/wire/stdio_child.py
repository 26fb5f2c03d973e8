"""A child process spoken to as newline-delimited JSON-RPC over its stdio: the ACP agents' and the MCP stdio
servers' transport, one process per simulated agent (agents/gateways/acp.py, agents/mcp/stdio.py).

Each runs in its own process group and is stopped with its agent, so none outlives the run; its pipes
are gevent's (the locustfile patches subprocess), so a read waits on its own greenlet only. Every line is
read within the run's bounds: a line past --max-sse-line-bytes leaves the output unreadable (`cut`).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import IO

from agents.wire.reading import ReadBounds, TooLarge
from lifecycle.target import Target, stop_target

EXIT_CODE_WAIT_S = 1.0  # after its output ends, how long the exit code is waited for (the line names it)
STOP_TIMEOUT_S = 3.0  # SIGTERM to SIGKILL


class StdioClosed(ConnectionError):
    """The child's output ended (it exited or closed stdout), or its pipes are gone."""


class StdioCut(Exception):
    """The child's output was left unread mid-line earlier (a cap): it cannot be read on."""


class StdioChild:
    """One child process in its own process group, its stdin and stdout piped to the kit."""

    def __init__(self, command: str, what: str) -> None:
        self.what = what  # how a line names it: "agent process", "MCP server process"
        self.cut: str | None = None  # why its output was left unread mid-line (a cap): it cannot go on
        self.popen = subprocess.Popen(
            shlex.split(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def send(self, message: dict) -> None:
        """StdioClosed when the child is gone before its input is written (it exited: a broken pipe)."""
        stdin = self.pipes()[0]
        try:
            stdin.write((json.dumps(message) + "\n").encode())
            stdin.flush()
        except BrokenPipeError:
            raise StdioClosed(f"{self.what} closed its input ({self.exit_status()})") from None

    def read_line(self, bounds: ReadBounds) -> bytes:
        """The next line; StdioClosed when the output ended, TooLarge past --max-sse-line-bytes."""
        self.check_readable()
        line = self.pipes()[1].readline(bounds.max_line_bytes + 1)
        if not line:
            raise StdioClosed(f"{self.what} closed its output ({self.exit_status()})")
        if len(line) > bounds.max_line_bytes:
            self.cut = f"a line passed --max-sse-line-bytes ({bounds.max_line_bytes:,} bytes)"
            raise TooLarge(self.cut)
        return line

    def check_readable(self) -> None:
        """StdioCut when an earlier line was left unread mid-way: no request is worth sending then."""
        if self.cut:
            raise StdioCut(f"the {self.what}'s output was cut earlier ({self.cut})")

    def exit_status(self) -> str:
        """'exit code N' once it has exited (waited for a moment), else 'still running'."""
        try:
            return f"exit code {self.popen.wait(EXIT_CODE_WAIT_S)}"
        except subprocess.TimeoutExpired:
            return "still running"

    def pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The child's stdin and stdout; StdioClosed when they are gone."""
        if self.popen.stdin is None or self.popen.stdout is None or self.popen.stdin.closed:
            raise StdioClosed(f"the {self.what} is not running")
        return self.popen.stdin, self.popen.stdout

    def end_input(self, grace_s: float) -> bool:
        """Close its stdin (a stdio server's signal to exit) and wait up to `grace_s`: whether it exited."""
        if self.popen.stdin is not None and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()
            except OSError:  # a broken pipe: it is gone already
                pass
        try:
            self.popen.wait(grace_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self) -> None:
        """SIGTERM its process group, then SIGKILL what is left (idempotent)."""
        stop_target(Target(url="", pid=self.popen.pid, popen=self.popen), timeout_s=STOP_TIMEOUT_S)
