"""The standalone stream of a Streamable HTTP session (a GET of the MCP URL with the session's id): where a
server sends what relates to no request of the client's (notifications, and its own requests: ping,
roots/list, sampling/createMessage, elicitation/create). One reader greenlet per session reads it and
answers each server request at once (ping with a result, the rest with "method not found": the kit
serves no client feature), so a tool call whose server waits on such an answer does not hang. A server
that offers no such stream (405) is left alone. Records no row.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

import gevent
import httpx

from agents.mcp_messages import parsed
from agents.reading import BoundedBody, ReadBounds
from agents.sse import iter_sse

STREAM_TIMEOUT = httpx.Timeout(None, connect=10.0)  # idle between messages as long as the session lives


class ServerStream:
    """The session's standalone stream, read on a greenlet of its own until `stop`."""

    def __init__(self, heard: Callable[[dict], None]) -> None:
        self.heard = heard  # given each server message (answered or counted by the session)
        self.reader: gevent.Greenlet | None = None

    def start(self, client: httpx.Client, path: str, headers: dict[str, str], bounds: ReadBounds) -> None:
        self.reader = gevent.spawn(self._read, client, path, headers, bounds)

    def _read(self, client: httpx.Client, path: str, headers: dict[str, str], bounds: ReadBounds) -> None:
        """The stream read to its end or its failure (then the session goes on without it)."""
        # the stream's whole size is the session's: one line (one message) is bounded
        line_bounds = ReadBounds(bounds.deadline_s, sys.maxsize, bounds.max_line_bytes)
        with contextlib.suppress(Exception):
            request = client.build_request("GET", path, headers=headers, timeout=STREAM_TIMEOUT)
            response = client.send(request, stream=True)
            try:
                if response.status_code >= 400 or not response.headers.get("content-type", "").startswith(
                    "text/event-stream"
                ):
                    return
                for event in iter_sse(BoundedBody(response, line_bounds).lines()):
                    with contextlib.suppress(Exception):  # a message that is not MCP: skipped
                        self.heard(parsed(event.data.encode()))
            finally:
                response.close()

    def stop(self) -> None:
        if self.reader is not None:
            self.reader.kill(block=True, timeout=1.0)
            self.reader = None
