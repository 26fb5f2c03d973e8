"""A small REST gateway with idle conversations of known memory, for the capacity tests: the truth the kit
must read back through a spec file (examples/specs/rest-sessions.toml), on paths unlike the simulator's.

Python's http.server: every response is written in two send()s (headers, then body), so a keep-alive
client meets the delayed-ACK stall (docs/field-notes.md).
In-process mode holds --session-mib per conversation;
process mode forks one child per conversation holding it (and shares --shared-mib with the parent).
It reports its own counts and its own start-up handling times at /api/v2/stats. Loopback only.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MIB = 1024 * 1024
PAGE = 4096


def touched(mib: float) -> bytearray:
    """`mib` MiB made resident: one write per page."""
    block = bytearray(int(mib * MIB))
    for offset in range(0, len(block), PAGE):
        block[offset] = 1
    return block


@dataclass
class Conversation:
    id: str
    run: str
    created: float
    ready_at: float
    block: bytearray | None = None
    child: tuple[int, int] | None = None  # (pid, write end of the pipe that keeps it alive)

    def view(self) -> dict:
        state = "ready" if time.monotonic() >= self.ready_at else "starting"
        return {"id": self.id, "state": state, "labels": {"loadkit_run": self.run}}


@dataclass
class Gateway:
    args: argparse.Namespace
    conversations: dict[str, Conversation] = field(default_factory=dict)
    opened: int = 0
    closed: int = 0
    create_ms: list[float] = field(default_factory=list)
    first: bytearray | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, run: str) -> Conversation | None:
        with self.lock:
            if self.args.refuse_at and len(self.conversations) + 1 >= self.args.refuse_at:
                return None
            self.opened += 1
            if self.first is None:
                self.first = touched(self.args.first_mib)
        time.sleep(self.args.startup_ms / 1000.0)
        conv = Conversation(
            uuid.uuid4().hex, run, time.time(), time.monotonic() + self.args.ready_after_ms / 1e3
        )
        if self.args.mode == "process":
            with self.lock:
                others = [c.child[1] for c in self.conversations.values() if c.child]
            conv.child = fork_holder(self.args.session_mib, others)
        else:
            conv.block = touched(self.args.session_mib)
        with self.lock:
            self.conversations[conv.id] = conv
        return conv

    def close(self, conv_id: str) -> bool:
        with self.lock:
            conv = self.conversations.pop(conv_id, None)
            if conv is not None:
                self.closed += 1
        if conv is None:
            return False
        if conv.child is not None:
            pid, keep = conv.child
            os.close(keep)
            os.waitpid(pid, 0)
        conv.block = None
        return True

    def stats(self, run: str | None) -> dict:
        with self.lock:
            convs = list(self.conversations.values())
            return {
                "open": sum(1 for c in convs if run is None or c.run == run),
                "opened": self.opened,
                "closed": self.closed,
                "create_ms": list(self.create_ms),
            }


def fork_holder(mib: float, others: list[int]) -> tuple[int, int]:
    """A child that holds `mib` MiB until the returned pipe end is closed; returns once it is resident.
    The child closes its copies of the other children's pipe ends, so each close reaches only its own."""
    gc.freeze()  # fewer copy-on-write pages in the child
    keep_r, keep_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (keep_w, ready_r, *others):
            os.close(fd)
        block = touched(mib)
        os.write(ready_w, b"1")
        os.read(keep_r, 1)  # returns when the parent closes its end (or dies)
        del block
        os._exit(0)
    os.close(keep_r)
    os.close(ready_w)
    os.read(ready_r, 1)
    os.close(ready_r)
    return pid, keep_w


CREATE = re.compile(r"^/api/v2/workspaces/[^/]+/conversations$")
ONE = re.compile(r"^/api/v2/conversations/([0-9a-f]+)(/messages)?$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real client would get
    gateway: Gateway

    def log_message(self, *_args) -> None:
        pass

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/healthz":
            return self.answer(200, {"ok": True})
        if path == "/api/v2/stats":
            run = query.removeprefix("run=") if query.startswith("run=") else None
            return self.answer(200, self.gateway.stats(run))
        match = ONE.match(path)
        conv = self.gateway.conversations.get(match.group(1)) if match and not match.group(2) else None
        return (
            self.answer(200, {"conversation": conv.view()})
            if conv
            else self.answer(404, {"error": "no such"})
        )

    def do_POST(self) -> None:
        started = time.perf_counter()
        body = self.read_body()
        if CREATE.match(self.path):
            run = str(((body.get("labels") or {}).get("loadkit_run")) or "")
            conv = self.gateway.create(run)
            if conv is None:
                return self.answer(503, {"error": "conversation limit reached"})
            self.answer(201, {"conversation": conv.view()})
            self.gateway.create_ms.append((time.perf_counter() - started) * 1000.0)
            return None
        match = ONE.match(self.path)
        if match and match.group(2) and match.group(1) in self.gateway.conversations:
            return self.answer(200, {"reply": f"echo: {body.get('text', '')}"})
        return self.answer(404, {"error": "no such"})

    def do_DELETE(self) -> None:
        match = ONE.match(self.path)
        if match and not match.group(2) and self.gateway.close(match.group(1)):
            return self.answer(200, {"deleted": match.group(1)})
        return self.answer(404, {"error": "no such"})

    def read_body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}") if length else {}

    def answer(self, status: int, payload: dict) -> None:
        """Headers in one write, the body in a second (http.server's own behaviour)."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=("inprocess", "process"), default="inprocess")
    parser.add_argument("--session-mib", type=float, default=4.0)
    parser.add_argument("--first-mib", type=float, default=0.0)
    parser.add_argument(
        "--shared-mib", type=float, default=0.0, help="process mode: parent block children share"
    )
    parser.add_argument("--startup-ms", type=float, default=0.0)
    parser.add_argument("--ready-after-ms", type=float, default=0.0)
    parser.add_argument("--refuse-at", type=int, default=0, help="refuse the Nth open conversation (503)")
    args = parser.parse_args()
    shared = touched(args.shared_mib)  # noqa: F841 - held for the process's life, shared with children
    Handler.gateway = Gateway(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
