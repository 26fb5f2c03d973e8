"""The agent's HTTP transport (agents/wire/gevent_transport.py) against a real socket server in this
process: a body's bytes come out as they arrive, a connection is reused only after a whole answer, and every
failure is the httpx exception the kit's error kinds read."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import gevent
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from gevent import monkey
from gevent.event import Event
from gevent.server import StreamServer

from agents.base import classify_exception, shared_tls_context
from agents.wire.gevent_transport import GeventTransport
from agents.wire.reading import BoundedBody, ReadBounds
from agents.wire.sse import iter_sse

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
HOST = "127.0.0.1"
HELD_S = 0.2  # how long the arrival-stamp test holds the event loop
STAMP_WITHIN_S = 0.05  # its token's stamp within this of the send: a quarter of the hold
WAIT_S = 5.0  # a step the test waits on; it passes in milliseconds


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@contextlib.contextmanager
def server(answer: Callable) -> Iterator[tuple[str, list]]:
    """A server on 127.0.0.1 answering each connection with `answer(socket, file)`; yields its URL and the
    list of its accepted connections."""
    accepted: list = []

    def handle(sock, address) -> None:
        accepted.append(address)
        answer(sock, sock.makefile("rb"))

    made = StreamServer(("127.0.0.1", 0), handle)
    made.start()
    try:
        yield f"http://127.0.0.1:{made.server_port}", accepted
    finally:
        made.stop(timeout=1)


def read_head(file) -> bytes:
    """The request's head and its Content-Length body."""
    lines = []
    while (line := file.readline()) not in (b"\r\n", b""):
        lines.append(line)
    sizes = [int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length")]
    return b"".join(lines) + file.read(sizes[0] if sizes else 0)


def client(url: str, read_s: float = WAIT_S) -> httpx.Client:
    transport = GeventTransport(4, shared_tls_context())
    return httpx.Client(base_url=url, timeout=httpx.Timeout(read_s, connect=WAIT_S), transport=transport)


def test_a_chunk_comes_out_when_it_arrives_not_when_a_block_fills():
    """A server that sends the next token only after the client has the first: a transport that waited for
    a fuller read would never get it."""
    first_read = Event()

    def answer(sock, file) -> None:
        read_head(file)
        sock.sendall(HEAD + chunk(b"data: 1\n\n"))
        first_read.wait(WAIT_S)
        sock.sendall(chunk(b"data: 2\n\n") + b"0\r\n\r\n")

    with server(answer) as (url, _), client(url) as http, http.stream("POST", "/", content=b"{}") as response:
        got = []
        with gevent.Timeout(WAIT_S):
            for part in response.iter_bytes():
                got.append(part)
                first_read.set()
    assert got == [b"data: 1\n\n", b"data: 2\n\n"]


def test_a_connection_is_reused_after_a_whole_answer_and_closed_after_one_left_unread():
    left = Event()  # the client has closed the answer to /unread before its body came

    def answer(sock, file) -> None:
        while head := read_head(file):
            if head.startswith(b"GET /unread"):
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
                left.wait(WAIT_S)
                sock.sendall(b"hello")
            else:
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")

    with server(answer) as (url, accepted), client(url) as http:
        assert [http.get("/").text for _ in range(3)] == ["hello"] * 3
        assert len(accepted) == 1
        with http.stream("GET", "/unread"):
            pass  # closed with its body unread: its connection cannot carry the next answer
        left.set()
        assert http.get("/").text == "hello"
        assert len(accepted) == 2


def test_the_request_arrives_as_httpx_built_it():
    heads: list[bytes] = []

    def answer(sock, file) -> None:
        heads.append(read_head(file))
        sock.sendall(b"HTTP/1.1 200 OK\r\nX-Note: caf\xe9\r\nContent-Length: 0\r\n\r\n")

    with server(answer) as (url, _), client(url) as http:
        response = http.post("/v1/chat?x=1", content=b'{"a": 1}', headers={"Authorization": "Bearer k"})
    head = heads[0]
    assert head.startswith(b"POST /v1/chat?x=1 HTTP/1.1\r\n")
    assert b"Authorization: Bearer k" in head.replace(b"authorization", b"Authorization")
    assert head.endswith(b'{"a": 1}')
    assert head.lower().count(b"host:") == 1
    assert response.headers["x-note"] == "café"  # latin-1, as httpx decodes a header


def test_a_body_that_ends_with_the_connection_is_whole():
    def answer(sock, file) -> None:
        read_head(file)
        sock.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 100_000)
        sock.close()

    with server(answer) as (url, _), client(url) as http:
        assert len(http.get("/").content) == 100_000


def failure(answer: Callable | None, read_s: float = WAIT_S) -> Exception:
    """What reading one whole answer raises."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(server(answer))[0] if answer else "http://127.0.0.1:9"
        http = stack.enter_context(client(url, read_s))
        with pytest.raises(httpx.HTTPError) as raised, gevent.Timeout(WAIT_S):
            http.get("/").read()
        return raised.value


def closed_at_once(sock, file) -> None:
    read_head(file)
    sock.close()


def closed_mid_body(sock, file) -> None:
    read_head(file)
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..")
    sock.close()


def not_http(sock, file) -> None:
    read_head(file)
    sock.sendall(b"\x00\x01 garbage, not an answer\r\n\r\n")


def silent(sock, file) -> None:
    read_head(file)
    gevent.sleep(WAIT_S)


def silent_mid_body(sock, file) -> None:
    read_head(file)
    sock.sendall(HEAD + chunk(b"data: 1\n\n"))
    gevent.sleep(WAIT_S)


@pytest.mark.parametrize(
    ("answer", "read_s", "error", "kind"),
    [
        (None, WAIT_S, httpx.ConnectError, "connection"),  # nothing listens
        (closed_at_once, WAIT_S, httpx.RemoteProtocolError, "connection"),
        (closed_mid_body, WAIT_S, httpx.RemoteProtocolError, "connection"),
        (not_http, WAIT_S, httpx.RemoteProtocolError, "connection"),
        (silent, 0.2, httpx.TimeoutException, "timeout"),
        (silent_mid_body, 0.2, httpx.ReadTimeout, "timeout"),
    ],
    ids=["refused", "closed-at-once", "closed-mid-body", "not-http", "no-answer", "no-more-body"],
)
def test_each_failure_is_the_httpx_error_the_kit_classifies(answer, read_s, error, kind):
    raised = failure(answer, read_s)
    assert isinstance(raised, error), repr(raised)
    assert classify_exception(raised) == kind


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files in `folder`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


def test_https_is_verified_with_the_given_context(tmp_path):
    """A server whose certificate the context trusts answers over TLS; the kit's own context (the system's
    authorities) refuses the same self-signed server: a connection error, nothing sent."""
    cert_file, key_file = self_signed(tmp_path)

    def answer(sock, address) -> None:
        read_head(sock.makefile("rb"))
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert_file, key_file)
    made = StreamServer((HOST, 0), answer, ssl_context=serving)
    made.start()
    url = f"https://127.0.0.1:{made.server_port}"
    try:
        trusting = GeventTransport(4, ssl.create_default_context(cafile=str(cert_file)))
        with httpx.Client(base_url=url, transport=trusting) as http:
            assert http.get("/").text == "ok"
        with client(url) as http, pytest.raises(httpx.ConnectError) as refused:
            http.get("/")
        assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
    finally:
        made.stop(timeout=1)


def test_a_token_is_timed_when_it_reached_the_host_not_when_a_busy_loop_read_it():
    """The token arrives while the event loop is held (a blocking sleep, as a busy load generator holds it):
    its event is timed by the kernel's receive stamp, within a few ms of the send, not 200 ms later."""
    go, sent_at = Event(), []

    def answer(sock, file) -> None:
        read_head(file)
        sock.sendall(HEAD)
        go.wait(WAIT_S)
        sent_at.append(time.perf_counter())
        sock.sendall(chunk(b'data: {"token": 1}\n\n') + b"0\r\n\r\n")

    with server(answer) as (url, _), client(url) as http, http.stream("POST", "/", content=b"{}") as response:
        body = BoundedBody(response, ReadBounds(WAIT_S, 1 << 20, 1 << 16))
        go.set()
        with gevent.Timeout(WAIT_S):
            while not sent_at:
                gevent.sleep(0.001)
        monkey.get_original("time", "sleep")(HELD_S)  # the loop held: nothing reads the socket meanwhile
        events = list(iter_sse(body.lines(), body.arrived))
    assert len(events) == 1
    assert events[0].arrived - sent_at[0] < STAMP_WITHIN_S, "timed when read, not when it arrived"
    assert time.perf_counter() - sent_at[0] >= HELD_S
