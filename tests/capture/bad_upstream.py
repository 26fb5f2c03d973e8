"""A model endpoint that misbehaves on purpose, one way per path prefix, for the recorder's wire tests:
`python tests/capture/bad_upstream.py` prints its port, then serves each connection in a forked child
process (so `/killed` is a real process dying mid-answer) until it is terminated.

/killed/...   a streamed answer whose process dies (os._exit) after 4 chunks
/reset/...    a streamed answer reset (RST) after 4 chunks
/chunked/...  a streamed answer whose 5th chunk is cut short, then the connection closed
/length/...   a JSON answer of Content-Length 400 closed after 100 bytes
/timeout/...  no answer at all, the connection held open
/denied/...   401 whose body echoes the request's key ("bad key Bearer sk-...")
/failing/...  500 with a JSON error body
/v1/...       200 quoting the request's Authorization and body back (an `X-Bad-Case: NAME` header picks
              another case on this path)
A TLS handshake gets a plain HTTP 400 (a TLS error at the client).
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import sys
import time

CHUNKS_BEFORE = 4


def sse_chunk(i: int) -> bytes:
    data = {"id": "chatcmpl-bad", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    data["choices"] = [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}]
    event = f"data: {json.dumps(data)}\n\n".encode()
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        if self.request.recv(1, socket.MSG_PEEK) == b"\x16":  # a TLS handshake: not spoken here
            self.send(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            return
        line = self.rfile.readline().decode("latin-1")
        headers = {}
        while (header := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        self.body = self.rfile.read(int(headers.get("content-length", "0") or 0))
        path = line.split(" ")[1] if " " in line else "/"
        case = headers.get("x-bad-case") or path.strip("/").split("/")[0]
        getattr(self, f"case_{case}", self.case_failing)(headers)

    def send(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def stream_start(self) -> None:
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(CHUNKS_BEFORE):
            self.send(sse_chunk(i))
            time.sleep(0.01)

    def case_killed(self, _: dict) -> None:
        self.stream_start()
        os._exit(1)

    def case_reset(self, _: dict) -> None:
        self.stream_start()
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.request.close()

    def case_chunked(self, _: dict) -> None:
        self.stream_start()
        self.send(sse_chunk(CHUNKS_BEFORE)[:30])

    def case_length(self, _: dict) -> None:
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n")
        self.send(b'{"id": "chatcmpl-bad", "choices": [{"index": 0, "message": {"role": "assistant", "con')

    def case_timeout(self, _: dict) -> None:
        time.sleep(60)

    def case_denied(self, headers: dict) -> None:
        said = json.dumps({"error": {"message": f"bad key {headers.get('authorization', '')}"}}).encode()
        self.send(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n")
        self.send(f"Content-Length: {len(said)}\r\nConnection: close\r\n\r\n".encode() + said)

    def case_v1(self, headers: dict) -> None:
        """A whole answer that quotes the request's key and its body back (an echoing upstream)."""
        quoted = f"you sent {headers.get('authorization', '')} and {self.body.decode('utf-8', 'replace')}"
        message = {"role": "assistant", "content": quoted}
        said = json.dumps(
            {
                "id": "chatcmpl-echo",
                "object": "chat.completion",
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        self.send(f"Content-Length: {len(said)}\r\nConnection: close\r\n\r\n".encode() + said)

    def case_failing(self, _: dict) -> None:
        said = json.dumps({"error": {"message": "the model fell over", "type": "server_error"}}).encode()
        self.send(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n")
        self.send(f"Content-Length: {len(said)}\r\nConnection: close\r\n\r\n".encode() + said)


class Server(socketserver.ForkingTCPServer):
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that left (the timeout case): nothing to say


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()
