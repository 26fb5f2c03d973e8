"""MCP over stdio, the client side: the server is a child process of the agent's own (one per simulated
agent, agents/wire/stdio_child.py, as ACP's agents are), spoken to as newline-delimited JSON-RPC on its stdin
and stdout. The session is the process: initialize, notifications/initialized, work, then close = its
stdin closed and the process waited for (stopped if it does not exit: MCP's stdio shutdown).

Requests of one session may overlap (an agent loop's concurrent tool calls): each is sent at once and one
greenlet at a time reads the output, keeping each response for the request it answers. A server request
is answered as over HTTP (agents/mcp/client.py), so a server waiting on the kit never hangs a call.
"""

from __future__ import annotations

import gevent.lock

from agents.mcp.client import HTTP_VERSIONS, Answer, McpProtocolError, McpSession, parsed
from agents.wire.reading import ReadBounds, deadline
from agents.wire.stdio_child import StdioChild

STDIO_VERSIONS = ("2024-11-05", *HTTP_VERSIONS)  # stdio is in every revision; Streamable HTTP came later
CLOSE_GRACE_S = 10.0  # after its stdin closes, how long the server has to exit (--mcp-close-timeout)
WHAT = "MCP server process"


class McpStdioSession(McpSession):
    """One MCP session over the stdio of its own server process (started by `initialize`)."""

    versions = STDIO_VERSIONS

    def __init__(
        self,
        command: str,
        bounds: ReadBounds,
        client_info: dict,
        offer: str | None = None,
        close_timeout_s: float = CLOSE_GRACE_S,
    ) -> None:
        super().__init__(bounds, client_info, offer)
        self.command = command
        self.close_timeout_s = close_timeout_s
        self.child: StdioChild | None = None
        self.reading = gevent.lock.Semaphore()  # one reader of the output at a time
        self.waiting: set[int] = set()  # requests sent and not yet answered
        self.replies: dict[int, tuple[int, dict]] = {}  # request id -> (its line's bytes, the response)
        self.notifications = 0  # server notifications (over stdio they ride no request's stream)
        self.refused = 0  # server requests answered with an error

    def fresh(self) -> McpStdioSession:
        return McpStdioSession(self.command, self.bounds, self.client_info, self.offer, self.close_timeout_s)

    def initialize(self) -> Answer:
        """Start the server process, then the handshake's request (the session id names the process)."""
        self.child = StdioChild(self.command, WHAT)
        self.session_id = f"stdio-{self.child.pid}"
        answer = self.request("initialize", self.initialize_params())
        if answer.ok:
            self.agree(answer)
        return answer

    def initialized(self) -> None:
        self.send_only({"jsonrpc": "2.0", "method": "notifications/initialized"}, "notifications/initialized")

    def request(self, method: str, params: dict | None = None) -> Answer:
        """Send, then read until this request's response, within --request-timeout."""
        self._child().check_readable()
        request_id, message = self.message(method, params)
        self.waiting.add(request_id)
        try:
            with deadline(self.bounds.deadline_s):
                self._await(request_id, message, method)
        finally:
            self.waiting.discard(request_id)
        size, response = self.replies.pop(request_id)
        answer = Answer(None, size=size)
        self.take(response, request_id, answer)
        return answer

    def _await(self, request_id: int, message: dict, method: str) -> None:
        """The request sent, its response read (kept in `replies`), one reader of the output at a time."""
        self.send_only(message, method)
        while request_id not in self.replies:
            with self.reading:
                if request_id not in self.replies:
                    self._read_one()

    def _read_one(self) -> None:
        """One line of the output: a response kept for its request, a notification counted, a server
        request answered. The output's end marks the session ended by the server."""
        try:
            line = self._child().read_line(self.bounds)
        except ConnectionError:
            self.dropped = True
            raise
        message = parsed(line)
        if "method" in message:
            if "id" in message:
                self.refused += self.answer_server(message)
            else:
                self.notifications += 1
        elif message.get("id") in self.waiting:
            self.replies[message["id"]] = (len(line), message)
        # else: the response to a request no longer waited for (its deadline passed): dropped

    def send_only(self, message: dict, what: str) -> None:
        try:
            self._child().send(message)
        except ConnectionError:  # a broken pipe: the process is gone
            self.dropped = True
            raise

    def close(self) -> Answer:
        """Close the server's stdin and wait for it to exit; one that does not is stopped, and the close
        fails saying so."""
        child = self._child()
        exited = child.end_input(self.close_timeout_s)
        child.stop()
        if not exited:
            raise McpProtocolError(
                f"the {WHAT} did not exit within --mcp-close-timeout {self.close_timeout_s:g} s of its stdin "
                "closing (stopped: SIGTERM, then SIGKILL, of its process group)"
            )
        return Answer(None)

    def end(self) -> None:
        """The server process stopped; the session is gone with it (nothing left to close)."""
        if self.child is not None:
            self.child.stop()
        self.session_id = None

    def ended_why(self) -> str:
        status = self.child.exit_status() if self.child is not None else "not started"
        return f"the {WHAT} ended the session ({status})"

    def _child(self) -> StdioChild:
        if self.child is None:
            raise McpProtocolError(f"the {WHAT} was not started (no initialize)")
        return self.child
