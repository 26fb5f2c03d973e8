"""A tiny ACP agent over stdio (newline-delimited JSON-RPC) for the kit's tests: known memory and timing.

It holds `--mib` MiB of touched memory (the per-agent truth) and `--session-mib` more per open session
(freed by session/close, which it advertises), answers a prompt with `--chunks` message chunks (of
`--chunk-bytes` each, if given), the first after `--first-ms`. With `--count-file` it writes its
open-session count there after every change (the test's view of the agent's own count).
It must never reach the network.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def prompt(request: dict, args: argparse.Namespace) -> dict:
    session_id = request["params"]["sessionId"]
    time.sleep(args.first_ms / 1000.0)
    for n in range(args.chunks):
        if n:
            time.sleep(args.chunk_ms / 1000.0)
        text = "x" * args.chunk_bytes if args.chunk_bytes else f"w{n} "
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": update},
            }
        )
    return {"stopReason": "end_turn"}


SESSIONS: dict[str, bytearray] = {}


def touched(mib: float) -> bytearray:
    block = bytearray(int(mib * 1024 * 1024))
    for offset in range(0, len(block), 4096):  # touch every page so it is resident
        block[offset] = 1
    return block


def count(args: argparse.Namespace) -> None:
    if args.count_file:
        with open(args.count_file, "w", encoding="utf-8") as handle:
            handle.write(str(len(SESSIONS)))


def answer(request: dict, args: argparse.Namespace) -> dict:
    method = request.get("method")
    if method == "initialize":
        capabilities = {"sessionCapabilities": {"close": {}}}
        return {"protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": []}
    if method == "session/new":
        session_id = uuid.uuid4().hex
        SESSIONS[session_id] = touched(args.session_mib)
        count(args)
        return {"sessionId": session_id}
    if method == "session/close":
        SESSIONS.pop(request["params"]["sessionId"], None)
        count(args)
        return {}
    if method == "session/prompt":
        return prompt(request, args)
    raise LookupError(method)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=float, default=0.0)
    parser.add_argument("--first-ms", type=float, default=50.0)
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--chunk-ms", type=float, default=10.0)
    parser.add_argument("--chunk-bytes", type=int, default=0, help="each chunk's text size (0: a short word)")
    parser.add_argument("--session-mib", type=float, default=0.0)
    parser.add_argument("--count-file", default=None)
    parser.add_argument("--tag", default="", help="a mark on the command line, for finding the processes")
    args = parser.parse_args()
    ballast = touched(args.mib)  # noqa: F841 - held for the process's life
    for line in sys.stdin:
        request = json.loads(line)
        try:
            send({"jsonrpc": "2.0", "id": request["id"], "result": answer(request, args)})
        except LookupError as exc:
            error = {"code": -32601, "message": f"method not found: {exc}"}
            send({"jsonrpc": "2.0", "id": request["id"], "error": error})


if __name__ == "__main__":
    main()
