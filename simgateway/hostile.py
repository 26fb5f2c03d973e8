"""Answers of a hostile gateway (the `--hostile` knob), on every path but /health and /v1/sim/: a stream that
never ends (`drip`: an SSE comment every half second and never a token; `garbage`: chunked bytes forever),
or one too large (`huge-body`: a 200 JSON body of `--hostile-bytes`; `huge-line`: one SSE line of that size).
`mcp-huge-ignored` is an honest MCP server but for the answers MCP gives no meaning (to a notification, a
response, the session's DELETE): those are huge bodies of `--hostile-bytes`.

The known truth of the load generator's bounds tests. Bodies are written in pieces, never held whole, and
a write to a client that has gone ends the answer.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

DRIP_EVERY_S = 0.5
GARBAGE_EVERY_S = 0.05
PIECE_BYTES = 64 * 1024
_SPARED = ("/health", "/v1/sim/")  # the kit's health check and the tests' truth stay honest


def hostile_middleware(mode: str, size: int):
    """An aiohttp middleware answering every spared-not path the `mode` way."""

    @web.middleware
    async def hostile(request: web.Request, handler):
        if request.path.startswith(_SPARED):
            return await handler(request)
        body = await request.read()  # kept by aiohttp: the handler reads it again
        if mode == MCP_HUGE_IGNORED and not _ignored_by_mcp(request.method, body):
            return await handler(request)
        return await ANSWERS[mode](request, size)

    return hostile


async def _drip(request: web.Request, _size: int) -> web.StreamResponse:
    response = await _started(request, "text/event-stream")
    while True:
        await response.write(b": still thinking\n\n")
        await asyncio.sleep(DRIP_EVERY_S)


async def _garbage(request: web.Request, _size: int) -> web.StreamResponse:
    response = await _started(request, "text/event-stream")
    while True:
        await response.write(b"\x00\xff<garbage>")
        await asyncio.sleep(GARBAGE_EVERY_S)


async def _huge_body(request: web.Request, size: int) -> web.StreamResponse:
    return await _padded(request, "application/json", b'{"pad": "', size, b'"}')


async def _huge_line(request: web.Request, size: int) -> web.StreamResponse:
    return await _padded(request, "text/event-stream", b'data: {"pad": "', size, b'"}\n\ndata: [DONE]\n\n')


async def _padded(request: web.Request, content_type: str, head: bytes, size: int, tail: bytes):
    """head, `size` bytes of padding written in pieces, tail: the answer ends."""
    response = await _started(request, content_type)
    await response.write(head)
    await _pad(response, size)
    await response.write(tail)
    await response.write_eof()
    return response


async def _pad(response: web.StreamResponse, size: int) -> None:
    piece = b"x" * PIECE_BYTES
    for start in range(0, size, PIECE_BYTES):
        await response.write(piece[: min(PIECE_BYTES, size - start)])


async def _started(request: web.Request, content_type: str) -> web.StreamResponse:
    """A 200 with chunked transfer (no Content-Length: the client cannot know the size up front)."""
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.enable_chunked_encoding()
    await response.prepare(request)
    return response


def _ignored_by_mcp(method: str, body: bytes) -> bool:
    """A DELETE, or a POST of a JSON-RPC message that is no request (a notification, a response)."""
    if method == "DELETE":
        return True
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return method == "POST" and isinstance(message, dict) and ("id" not in message or "method" not in message)


MCP_HUGE_IGNORED = "mcp-huge-ignored"
ANSWERS = {
    "drip": _drip,
    "garbage": _garbage,
    "huge-body": _huge_body,
    "huge-line": _huge_line,
    MCP_HUGE_IGNORED: _huge_body,
}
