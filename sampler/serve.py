"""`python -m sampler serve`: the sampler on the gateway's host, serving its rows over HTTP (JSON) to the
kit on another machine: `GET /v1/clock` (this host's time), `GET /v1/rows?since=N` (rows from a cursor) and
`GET /v1/reading?pss=0|1` (a capacity step's reading of the target, taken now).

Every request needs `Authorization: Bearer <token>`; the token comes from an environment variable and is
never printed or logged (no request is logged at all). Binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from contract.schema import SAMPLE_COLUMNS
from sampler.loop import Sampler
from sampler.memory_probe import MemoryReading
from sampler.row_buffer import RowBuffer

MAX_ROWS_PER_READ = 5000


@dataclass
class ServiceState:
    """What the HTTP threads read: the rows, this run of the service, and whether it still samples."""

    token: str
    rows: RowBuffer
    host: str
    interval_s: float
    clock: Callable[[], float] = time.time
    boot: str = field(default_factory=lambda: uuid.uuid4().hex[:12])  # a restart starts new row numbers
    stopped: str | None = None  # why sampling ended (target exited, duration); rows stay readable
    step_reading: Callable[[bool], MemoryReading | None] = lambda _pss: None

    def authorized(self, header: str) -> bool:
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def clock_doc(self) -> dict:
        return {"ts": self.clock(), "host": self.host, "boot": self.boot}

    def rows_doc(self, since: int, limit: int) -> dict:
        page = self.rows.since(since, min(limit, MAX_ROWS_PER_READ))
        return {
            "boot": self.boot,
            "host": self.host,
            "interval_s": self.interval_s,
            "stopped": self.stopped,
            "columns": list(SAMPLE_COLUMNS),
            "first": page.first,
            "next": page.next,
            "lost": page.lost,
            "rows": [[row[c] for c in SAMPLE_COLUMNS] for row in page.rows],
        }


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall
    server_version = "loadkit-sampler"
    state: ServiceState  # set on the subclass made by make_server

    def do_GET(self) -> None:
        if not self.state.authorized(self.headers.get("Authorization", "")):
            return self._send(401, {"error": "missing or wrong bearer token"})
        url = urlsplit(self.path)
        if url.path == "/v1/clock":
            return self._send(200, self.state.clock_doc())
        if url.path == "/v1/rows":
            query = parse_qs(url.query)
            try:
                since, limit = (int(query.get(k, [d])[0]) for k, d in (("since", 0), ("limit", 1000)))
            except ValueError:
                since = limit = -1
            if since < 0 or limit < 0:
                return self._send(400, {"error": "since and limit must be whole numbers >= 0"})
            return self._send(200, self.state.rows_doc(since, limit))
        if url.path == "/v1/reading":  # a capacity step's reading, taken now
            reading = self.state.step_reading(parse_qs(url.query).get("pss", ["0"])[0] == "1")
            if reading is None:
                return self._send(409, {"error": "this service watches no target process"})
            return self._send(200, dataclasses.asdict(reading))
        return self._send(404, {"error": f"no such path: {url.path}"})

    def _send(self, status: int, doc: dict) -> None:
        body = json.dumps(doc, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        """No request log: nothing a request carries ends up in a file."""


def make_server(state: ServiceState, bind: str, port: int) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer((bind, port), handler)
    server.daemon_threads = True
    return server


def serve(sampler: Sampler, state: ServiceState, server: ThreadingHTTPServer, stop: threading.Event) -> str:
    """Answer requests while sampling; when sampling ends (target gone, duration), keep answering with
    the rows kept until `stop` is set. Returns why sampling ended."""
    thread = threading.Thread(target=server.serve_forever, name="sampler-http", daemon=True)
    thread.start()
    try:
        state.stopped = sampler.run(stop)
        if not stop.is_set():
            print(f"sampler serve: {state.stopped}; still serving {sampler.rows} rows", file=sys.stderr)
        stop.wait()
    finally:
        server.shutdown()
        server.server_close()
    return state.stopped
