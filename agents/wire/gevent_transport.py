"""An httpx transport over geventhttpclient, the HTTP stack of Locust's own FastHttpUser: an agent keeps
httpx's API (its requests, responses, hooks, auth, errors) and sheds httpcore and h11, half of the load
generator's CPU at 100 streams (docs/benchmarks.md, "Where the load generator's CPU goes"): geventhttpclient
parses HTTP in C (llhttp).

The transport owns one connection pool per origin and gives each answer's body as it arrives: a chunk the
moment its bytes are read, never held back for a fuller block (an SSE token would wait for the next ones).
Over plain HTTP each read also says when its bytes reached this host: the kernel's receive stamp
(SO_TIMESTAMPNS), kept in the response's extensions under ARRIVED. A token is timed by it, not by when a
busy event loop got round to reading it (at 500 streams on 2 cores, tens of ms later). Failures come out
as httpx's own exceptions, so error kinds and rows read as with httpx's default transport.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import sys
import time
from collections.abc import Iterator

import httpx
from geventhttpclient import HTTPClient
from geventhttpclient.header import Headers
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError, HTTPSocketPoolResponse

READ_BYTES = 64 * 1024  # one socket read's most: what has arrived, up to this, is one chunk
ARRIVED = "loadkit.arrived"  # response extension: when the body's last read bytes reached this host
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's number, where Python's socket names none
STAMPED = sys.platform == "linux"  # elsewhere the option differs: a read is timed when it is read
TIMESPEC = struct.Struct("qq")  # the stamp: seconds and nanoseconds of the real-time clock
STAMP_SPACE = socket.CMSG_SPACE(TIMESPEC.size)
Origin = tuple[str, str, int, float | None]  # scheme, host, port, read timeout (a pool's sockets keep one)


class GeventTransport(httpx.BaseTransport):
    """httpx requests sent with geventhttpclient: at most `connections` open per origin, TLS with
    `tls_context`, the connect and read timeouts of each request's own httpx.Timeout."""

    def __init__(self, connections: int, tls_context: ssl.SSLContext) -> None:
        self.connections = connections
        self.tls_context = tls_context
        self._pools: dict[Origin, HTTPClient] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        pool, target = self._pool(request), request.url.raw_path.decode("ascii")
        with httpx_errors(request, sent=False):
            answer = pool.request(request.method, target, request.read(), sent_headers(request))
        body = AnswerBody(answer, request)
        response = httpx.Response(
            answer.status_code,
            headers=[(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.items()],
            stream=body,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (answer.status_message or "").encode()},
        )
        if stamps_reads(pool):
            body.stamps = response.extensions  # the response's own: httpx copies the dict it is given
        return response

    def _pool(self, request: httpx.Request) -> HTTPClient:
        url, timeouts = request.url, request.extensions.get("timeout", {})
        port = url.port or (443 if url.scheme == "https" else 80)
        origin = (url.scheme, url.host, port, timeouts.get("read"))
        pool = self._pools.get(origin)
        if pool is None:
            pool = self._pools[origin] = HTTPClient(
                url.host,
                port=port,
                ssl=url.scheme == "https",
                ssl_context_factory=lambda cafile=None: self.tls_context,
                concurrency=self.connections,
                connection_timeout=timeouts.get("connect"),
                network_timeout=origin[3],
            )
            if stamps_reads(pool):
                pool._connection_pool.after_connect = stamp_arrivals  # type: ignore[method-assign] # its hook
        return pool

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


def stamps_reads(pool: HTTPClient) -> bool:
    """The pool's reads carry the kernel's stamp: plain HTTP on Linux (a TLS socket has no recvmsg)."""
    return STAMPED and not pool.ssl


def sent_headers(request: httpx.Request) -> Headers:
    """httpx's header bytes as the text geventhttpclient sends: HTTP's latin-1, both ways."""
    return Headers((name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw)


class AnswerBody(httpx.SyncByteStream):
    """An answer's body, a chunk per socket read; closed before its end, its connection is closed (a
    connection is reused only once its answer was read to the end)."""

    def __init__(self, answer: HTTPSocketPoolResponse, request: httpx.Request) -> None:
        self.answer = answer
        self.request = request
        self.stamps: dict | None = None  # the response's extensions: each read's arrival (None: unstamped)

    def __iter__(self) -> Iterator[bytes]:
        with httpx_errors(self.request, sent=True):
            while chunk := next_chunk(self.answer, self.stamps):
                yield chunk

    def close(self) -> None:
        self.answer.release()


def next_chunk(answer: HTTPSocketPoolResponse, stamps: dict | None) -> bytes:
    """The body's bytes parsed so far, after at most one socket read; b"" at its end. (geventhttpclient's
    own `read(n)` waits for n bytes.) Reads the response's parse buffer, as its `read` does. With `stamps`,
    the read's arrival goes in it (bytes parsed with the head have none: they are timed when read)."""
    while not answer._body_buffer:
        if answer.message_complete:
            return b""
        sock = answer._sock
        if sock is None:
            raise HTTPConnectionClosed("the connection closed before the end of the body")
        if stamps is None:
            data = sock.recv(READ_BYTES)
        else:
            data, ancillary, _, _ = sock.recvmsg(READ_BYTES, STAMP_SPACE)
            stamps[ARRIVED] = arrival(ancillary)
        answer.feed(data)  # b"": the end of the stream, which ends a body delimited by the close
        if not data and not answer.message_complete:
            answer.release()
            raise HTTPConnectionClosed("the server closed the connection before the end of the body")
    chunk = bytes(answer._body_buffer)
    del answer._body_buffer[:]
    return chunk


def stamp_arrivals(sock: socket.socket) -> None:
    """Ask the kernel to stamp each read with when its bytes arrived (refused: reads carry no stamp and
    are timed when read)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


def arrival(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """A read's arrival on time.perf_counter's clock, from the kernel's real-time stamp: now, less the
    bytes' age (None: the read carried no stamp)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
            seconds, nanoseconds = TIMESPEC.unpack_from(data)
            age = time.time() - seconds - nanoseconds / 1e9
            return time.perf_counter() - max(age, 0.0)
    return None


@contextlib.contextmanager
def httpx_errors(request: httpx.Request, sent: bool) -> Iterator[None]:
    """geventhttpclient's and the socket's failures as the httpx exceptions httpcore raises for them;
    `sent`: past the answer's head (a timeout then is a read's, a closed connection a broken body)."""
    try:
        yield
    except TimeoutError as exc:
        if sent:
            raise httpx.ReadTimeout(f"no more of the body in time: {exc}", request=request) from exc
        raise httpx.TimeoutException(f"no connection or no answer in time: {exc}", request=request) from exc
    except HTTPConnectionClosed as exc:
        message = str(exc) if sent else "Server disconnected without sending a response."
        raise httpx.RemoteProtocolError(message, request=request) from exc
    except HTTPParseError as exc:
        raise httpx.RemoteProtocolError(f"the answer is not HTTP/1.1: {exc}", request=request) from exc
    except ssl.SSLError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except (ConnectionResetError, BrokenPipeError) as exc:
        raise httpx.ReadError(str(exc), request=request) from exc
    except OSError as exc:  # refused, unreachable, a name not found
        raise (httpx.ReadError if sent else httpx.ConnectError)(str(exc), request=request) from exc
    except ValueError as exc:  # a header or target geventhttpclient refuses to send
        raise httpx.LocalProtocolError(str(exc), request=request) from exc
