"""The benchmarks' fast targets' HTTP/1.1 (fast_chat.py, fast_mcp.py): requests read off a keep-alive
connection as they come (pipelined or not), each answered in order by a function of its method and
body, on 127.0.0.1. No routing, no checks: a stopwatch's far end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

Answer = Callable[[str, bytearray], bytes]  # (method, body) -> the whole response's bytes


class Connection(asyncio.Protocol):
    """One connection's requests; the buffer a bytearray, so a long body is not grown by copies."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
            length = int(fields.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return  # the body is still coming
            body = self.buffer[end + 4 : end + 4 + length]
            del self.buffer[: end + 4 + length]
            assert self.transport is not None
            self.transport.write(self.answer(head[0].split(" ", 1)[0], body))


async def serve(answer: Answer, port: int) -> None:
    """Answer on 127.0.0.1:`port` until killed; says "listening" once it does."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(answer), "127.0.0.1", port, backlog=2048)
    print(f"listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()
