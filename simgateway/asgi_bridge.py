"""An aiohttp handler that serves one request through an ASGI application (the MCP SDK's Streamable HTTP
session manager), so the simulator's MCP endpoint shares its port, process and event loop.

Only the HTTP plumbing is here (scope, body in, status/headers/body chunks out, streamed as they come):
the protocol is the ASGI application's. Must not look into what the application answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
AsgiApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


def asgi_scope(request: web.Request) -> Scope:
    """The ASGI HTTP scope of an aiohttp request (headers lower-cased as bytes, as ASGI wants them)."""
    peer = request.transport.get_extra_info("peername") if request.transport else None
    host, port = (request.url.host or "127.0.0.1", request.url.port or 80)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.encode(),
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()],
        "client": tuple(peer[:2]) if peer else None,
        "server": (host, port),
    }


# How often an answer still being sent looks whether it is complete or its client gone: an HTTP+SSE session
# closed by its client frees its memory this late at most (a capacity or churn reading right after).
DISCONNECT_POLL_S = 0.05


def client_left(request: web.Request) -> bool:
    """Whether the client's connection is gone (aiohttp drops the request's transport when it closes)."""
    return request.transport is None or request.transport.is_closing()


async def serve_asgi(app: AsgiApp, request: web.Request, body: bytes) -> web.StreamResponse:
    """Run `app` for `request` (whose body was read as `body`); its answer streamed back chunk by chunk
    (an SSE response's events reach the client as the application sends them)."""
    sent_body = False
    gone = asyncio.Event()  # set when the answer is complete: a waiting receive() then sees a disconnect
    complete: asyncio.Future | None = None  # gone.wait(), once a receive() waits on it
    response: web.StreamResponse | None = None

    async def receive() -> Message:
        """The body, then a disconnect once the answer is complete or its client gone (aiohttp tells a
        handler nothing of that: an endless answer, an SSE session's stream, looks every so often)."""
        nonlocal sent_body, complete
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        complete = complete or asyncio.ensure_future(gone.wait())
        while not complete.done() and not client_left(request):
            await asyncio.wait({complete}, timeout=DISCONNECT_POLL_S)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", ()):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            chunk = message.get("body", b"")
            try:
                if chunk:
                    await response.write(chunk)
                if not message.get("more_body", False):
                    await response.write_eof()
                    gone.set()
            except ConnectionResetError:  # the client left mid-answer: the application hears a disconnect
                gone.set()

    try:
        await app(asgi_scope(request), receive, send)
    finally:
        gone.set()
        if complete is not None:
            complete.cancel()
    if response is None:
        return web.Response(status=500, text="the MCP application sent no answer")
    return response
