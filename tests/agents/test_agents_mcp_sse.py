"""The HTTP+SSE (2024-11-05) fallback of the kit's MCP client without a server process: a scripted server on
httpx's MockTransport whose GET stream is fed as its POSTs arrive. The fallback's cue (a 4xx to the
initialize POST, not an auth one), the endpoint event, responses matched to overlapping requests, server
requests answered on the endpoint, a deadline that leaves the stream readable, and a stream that ends."""

from __future__ import annotations

import json
import time

import gevent
import gevent.queue
import httpx
import pytest

from agents.mcp.client import McpHttpSession, McpProtocolError
from agents.mcp.sse_transport import SseStreamClosed, falls_back
from agents.wire.reading import DeadlineExceeded, ReadBounds, TooLarge
from agents.wire.target_origin import OffTargetError

BOUNDS = ReadBounds(2.0, 1 << 20, 1 << 16)
ENDPOINT = "/messages/?session_id=abc123"
END = object()  # put on a stream: the server closes it


def event(message: dict, name: str = "message") -> bytes:
    return f"event: {name}\ndata: {json.dumps(message)}\n\n".encode()


class Stream(httpx.SyncByteStream):
    """The GET's body: chunks as the server puts them, until END."""

    def __init__(self, first: bytes) -> None:
        self.queue: gevent.queue.Queue = gevent.queue.Queue()
        self.queue.put(first)

    def __iter__(self):
        while (chunk := self.queue.get()) is not END:
            yield chunk


class LegacyServer:
    """An MCP server of the 2024-11-05 transport: POST to its URL is 405, GET opens a stream whose first
    event is `endpoint`; each request POSTed there is answered on the stream by `answer(message)` (a list
    of messages; none: the request is left unanswered)."""

    def __init__(self, answer=None, endpoint: str = ENDPOINT, post_status: int = 405) -> None:
        self.answer = answer or self.honest
        self.endpoint = endpoint
        self.post_status = post_status
        self.streams: list[Stream] = []
        self.posted: list[dict] = []
        self.gets = 0

    @staticmethod
    def honest(message: dict) -> list[dict]:
        if message["method"] == "initialize":
            result = {"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "old"}}
            return [{"jsonrpc": "2.0", "id": message["id"], "result": result}]
        return [{"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message["method"]}}]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/sse" and request.method == "GET":
            self.gets += 1
            stream = Stream(b": hello\n\n" + f"event: endpoint\ndata: {self.endpoint}\n\n".encode())
            self.streams.append(stream)
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)
        if request.url.path == "/sse":
            return httpx.Response(self.post_status, text="Method Not Allowed")
        message = json.loads(request.content)
        self.posted.append(message)
        if "method" in message and "id" in message:
            for reply in self.answer(message):
                self.say(reply)
        return httpx.Response(202, text="Accepted")

    def say(self, message) -> None:
        self.streams[-1].queue.put(message if message is END else event(message))


def session_on(server: LegacyServer, bounds: ReadBounds = BOUNDS) -> McpHttpSession:
    client = httpx.Client(base_url="http://mcp.test", transport=httpx.MockTransport(server))
    return McpHttpSession(client, "/sse", bounds, {"name": "loadkit-run", "version": "1"})


def test_a_405_to_the_initialize_post_opens_the_sse_stream_and_speaks_over_its_endpoint():
    server = LegacyServer()
    session = session_on(server)
    answer = session.initialize()
    assert answer.ok and answer.status_code == 202  # the POST to the endpoint; the result on the stream
    assert session.protocol_version == "2024-11-05" and session.session_id == "abc123"
    assert session.channel is not None and session.channel.endpoint == "http://mcp.test" + ENDPOINT
    session.initialized()
    assert session.request("tools/list").result == {"echo": "tools/list"}
    assert [m.get("method") for m in server.posted] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    assert server.posted[0]["params"]["clientInfo"]["name"] == "loadkit-run"
    assert session.close().status_code == 200 and server.gets == 1
    assert session.channel.reader is not None and session.channel.reader.dead
    again = session.fresh()
    assert again.initialize().ok and server.gets == 2  # told it is HTTP+SSE: no POST tried first
    assert [m.get("method") for m in server.posted].count("initialize") == 2


def test_overlapping_requests_each_get_their_own_response_and_server_messages_are_answered():
    def answer(message: dict) -> list[dict]:
        if message["method"] != "tools/call":
            return LegacyServer.honest(message)
        n = message["params"]["arguments"]["n"]
        asks = [{"jsonrpc": "2.0", "id": 100 + n, "method": "roots/list"}] if n == 1 else []
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n}}
        return [*asks, note]  # the results come later, in reverse order

    server = LegacyServer(answer)
    session = session_on(server)
    session.initialize()
    calls = [
        gevent.spawn(session.request, "tools/call", {"name": "t", "arguments": {"n": n}}) for n in (1, 2, 3)
    ]
    gevent.sleep(0.05)
    ids = [m["id"] for m in server.posted if m.get("method") == "tools/call"]
    for request_id in reversed(ids):
        server.say({"jsonrpc": "2.0", "id": request_id, "result": {"for": request_id}})
    gevent.joinall(calls, timeout=2, raise_error=True)
    assert [c.value.result for c in calls] == [{"for": i} for i in ids]
    refusal = next(m for m in server.posted if m.get("id") == 101 and "error" in m)
    assert refusal["error"]["code"] == -32601  # a server request refused on the endpoint, never left waiting
    assert session.notifications == 3 and session.refused == 1
    session.close()


def test_auth_and_rate_answers_are_not_a_cue_and_a_refused_get_names_both_answers():
    assert falls_back(404) and falls_back(405) and falls_back(400)
    assert not any(falls_back(s) for s in (200, 401, 403, 429, 500, None))
    server = LegacyServer(post_status=401)
    answer = session_on(server).initialize()
    assert answer.status_code == 401 and server.gets == 0

    def no_get(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404 if request.method == "GET" else 405, text="Not Found")

    client = httpx.Client(base_url="http://mcp.test", transport=httpx.MockTransport(no_get))
    answer = McpHttpSession(client, "/sse", BOUNDS, {"name": "n", "version": "1"}).initialize()
    assert answer.status_code == 404 and not answer.ok
    assert answer.error == "POST answered 405; GET (HTTP+SSE) answered 404: Not Found"


def test_a_stream_that_is_not_this_transport_is_a_protocol_error_and_an_endpoint_elsewhere_is_refused():
    def not_sse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(405) if request.method == "POST" else httpx.Response(200, json={})

    client = httpx.Client(base_url="http://mcp.test", transport=httpx.MockTransport(not_sse))
    with pytest.raises(McpProtocolError, match="content type 'application/json', not an SSE stream"):
        McpHttpSession(client, "/sse", BOUNDS, {}).initialize()
    server = LegacyServer(endpoint="http://elsewhere.test/messages/")
    with pytest.raises(OffTargetError) as refused:
        session_on(server).initialize()
    assert str(refused.value) == (
        "the endpoint event names http://elsewhere.test/messages/, not on the target (http://mcp.test): "
        "nothing is sent there"
    )
    assert server.posted == []


def test_a_stream_that_never_names_its_endpoint_fails_within_the_deadline():
    class Silent(LegacyServer):
        def __call__(self, request: httpx.Request) -> httpx.Response:
            if request.method == "GET":
                stream = Stream(b": waiting\n\n")  # comments, then nothing: never an endpoint event
                self.streams.append(stream)
                return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)
            return httpx.Response(405)

    server = Silent()
    session = session_on(server, ReadBounds(0.3, 1 << 20, 1 << 16))
    started = time.perf_counter()
    with pytest.raises(DeadlineExceeded, match="no complete answer within --request-timeout 0.3 s"):
        session.initialize()
    assert time.perf_counter() - started < 1.0 and session.channel is None and session.session_id is None


def test_a_deadline_fails_its_request_and_leaves_the_stream_readable_for_the_next():
    def answer(message: dict) -> list[dict]:
        return [] if message["method"] == "tools/call" else LegacyServer.honest(message)

    server = LegacyServer(answer)
    session = session_on(server, ReadBounds(0.3, 1 << 20, 1 << 16))
    session.initialize()
    with pytest.raises(DeadlineExceeded):
        session.request("tools/call", {"name": "slow", "arguments": {}})
    late = next(m["id"] for m in server.posted if m.get("method") == "tools/call")
    server.say({"jsonrpc": "2.0", "id": late, "result": {"late": True}})  # dropped: nobody waits for it
    assert session.request("ping").result == {"echo": "ping"} and not session.dropped
    session.close()


def test_a_stream_the_server_ends_fails_the_call_under_way_and_drops_the_session():
    def answer(message: dict) -> list:
        return [END] if message["method"] == "tools/call" else LegacyServer.honest(message)

    session = session_on(LegacyServer(answer))
    session.initialize()
    with pytest.raises(SseStreamClosed, match="the server closed the session's SSE stream"):
        session.request("tools/call", {"name": "t", "arguments": {}})
    assert session.dropped
    assert session.ended_why() == "the server ended the session (the server closed the session's SSE stream)"
    with pytest.raises(SseStreamClosed):  # nothing more is sent on a session that is over
        session.request("ping")


def test_a_line_past_the_cap_fails_what_waits():
    def answer(message: dict) -> list[dict]:
        if message["method"] == "initialize":
            return LegacyServer.honest(message)
        return [{"jsonrpc": "2.0", "id": message["id"], "result": {"text": "x" * 5000}}]

    session = session_on(LegacyServer(answer), ReadBounds(2.0, 1 << 20, 4096))
    session.initialize()
    with pytest.raises(TooLarge, match="--max-sse-line-bytes"):
        session.request("tools/call", {"name": "t", "arguments": {}})
    assert session.dropped
