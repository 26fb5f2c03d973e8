"""An httpx transport over geventhttpclient, the HTTP stack of Locust's own FastHttpUser: an agent keeps
httpx's API (its requests, responses, hooks, auth, errors) and sheds httpcore and h11, half of the load
generator's CPU at 100 streams (docs/benchmarks.md, "Where the load generator's CPU goes"): geventhttpclient
parses HTTP in C (llhttp).

The transport owns one connection pool per origin and gives each answer's body as it arrives: a chunk the
moment its bytes are read, never held back for a fuller block (an SSE token would wait for the next ones).
Failures come out as httpx's own exceptions, so error kinds and rows read as with httpx's default transport.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator

import httpx
from geventhttpclient import HTTPClient
from geventhttpclient.header import Headers
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError, HTTPSocketPoolResponse

READ_BYTES = 64 * 1024  # one socket read's most: what has arrived, up to this, is one chunk
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
        return httpx.Response(
            answer.status_code,
            headers=[(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.items()],
            stream=AnswerBody(answer, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (answer.status_message or "").encode()},
        )

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
        return pool

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


def sent_headers(request: httpx.Request) -> Headers:
    """httpx's header bytes as the text geventhttpclient sends: HTTP's latin-1, both ways."""
    return Headers((name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw)


class AnswerBody(httpx.SyncByteStream):
    """An answer's body, a chunk per socket read; closed before its end, its connection is closed (a
    connection is reused only once its answer was read to the end)."""

    def __init__(self, answer: HTTPSocketPoolResponse, request: httpx.Request) -> None:
        self.answer = answer
        self.request = request

    def __iter__(self) -> Iterator[bytes]:
        with httpx_errors(self.request, sent=True):
            while chunk := next_chunk(self.answer):
                yield chunk

    def close(self) -> None:
        self.answer.release()


def next_chunk(answer: HTTPSocketPoolResponse) -> bytes:
    """The body's bytes parsed so far, after at most one socket read; b"" at its end. (geventhttpclient's
    own `read(n)` waits for n bytes.) Reads the response's parse buffer, as its `read` does."""
    while not answer._body_buffer:
        if answer.message_complete:
            return b""
        sock = answer._sock
        if sock is None:
            raise HTTPConnectionClosed("the connection closed before the end of the body")
        data = sock.recv(READ_BYTES)
        answer.feed(data)  # b"": the end of the stream, which ends a body delimited by the close
        if not data and not answer.message_complete:
            answer.release()
            raise HTTPConnectionClosed("the server closed the connection before the end of the body")
    chunk = bytes(answer._body_buffer)
    del answer._body_buffer[:]
    return chunk


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
