"""`python -m kit.capture --upstream URL --out FILE`: record an agent's model calls into a session file.

Point the agent at the address it prints (its OpenAI base URL, and its MCP server's URL when the upstream
serves MCP too) and use it as usual; every chat completion, Responses call and MCP tools/call passes
through unchanged and is written to FILE (docs/record-replay.md). It listens on
loopback unless told otherwise, never overwrites a file, and ends on SIGINT/SIGTERM with the count of what
it wrote. Bad input: one line on stderr, exit code 2.

`python -m kit.capture import-otel SPANS.json --out FILE` writes the same session file from an
OpenTelemetry GenAI trace export instead (capture/otel_import.py), and `import-litellm LOGS --out FILE`
from a LiteLLM proxy's logged calls (capture/litellm_import.py): one command makes session files,
whichever way the calls were seen. Their input is a regular file within `--max-bytes`
(capture/import_input.py); each says how its sessions were formed.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import sys
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from capture.import_input import DEFAULT_MAX_BYTES
from capture.litellm_import import import_logs
from capture.otel_import import import_export
from capture.proxy import Recorder, build_app
from capture.session_log import SessionImportError, SessionLog
from contract import exit_codes
from contract.cli import positive_int

log = logging.getLogger("kit.capture")


class CaptureInputError(ValueError):
    """A refused option: the message is the one line the user sees."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kit.capture", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--upstream", required=True, help="the model endpoint's base URL, e.g. http://127.0.0.1:4000"
    )
    parser.add_argument("--out", required=True, help="the session file to write (must not exist)")
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (port 0: a free one)")
    parser.add_argument("--session-header", help="a request header that names the agent's session")
    parser.add_argument(
        "--allow-remote-agents", action="store_true", help="listen on a non-loopback address (no auth!)"
    )
    return parser.parse_args(argv)


def checked(args: argparse.Namespace) -> tuple[str, int, Path]:
    """(host, port, out) once every option is sound; CaptureInputError naming the one that is not."""
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in args.upstream):
        raise CaptureInputError(f"--upstream {args.upstream!r}: a URL has no spaces or control characters")
    parts = urlsplit(args.upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CaptureInputError(f"--upstream {args.upstream!r}: expected an http(s):// URL")
    if parts.username or parts.password:
        raise CaptureInputError("--upstream: no credentials in the URL (the agent's own headers carry them)")
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise CaptureInputError(f"--listen {args.listen!r}: expected HOST:PORT, e.g. 127.0.0.1:8100")
    if not args.allow_remote_agents and not _loopback(host):
        raise CaptureInputError(f"--listen {host}: not a loopback address (add --allow-remote-agents)")
    out = Path(args.out)
    if out.exists():
        raise CaptureInputError(f"--out {out}: exists; a recording never overwrites one")
    if not out.parent.is_dir():
        raise CaptureInputError(f"--out {out}: no such folder {out.parent}")
    if not os.access(out.parent, os.W_OK):
        raise CaptureInputError(f"--out {out}: its folder is not writable")
    return host, int(port), out


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def serve(upstream: str, listen: str, sessions: SessionLog, header: str | None) -> None:
    """Listen until SIGINT/SIGTERM; the address goes to stdout first, as the agent's base URL. A port
    that cannot be taken or a file that cannot be written is CaptureInputError naming its option."""
    host, _, port = listen.rpartition(":")
    # handler_cancellation: an agent that hangs up ends the upstream call too, as it would directly
    runner = web.AppRunner(
        build_app(Recorder(upstream, sessions, header)), access_log=None, handler_cancellation=True
    )
    await runner.setup()
    try:
        await _listen(runner, host, int(port), listen)
        _open(sessions)  # once listening: a refused --listen leaves no file
        bound = runner.addresses[0]
        sys.stdout.write(
            f"kit.capture recording to {sessions.path}: point the agent at http://{bound[0]}:{bound[1]}\n"
        )
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


async def _listen(runner: web.AppRunner, host: str, port: int, listen: str) -> None:
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:  # the port is taken, the address is not this machine's
        raise CaptureInputError(f"--listen {listen}: {exc.strerror or exc}") from None


def _open(sessions: SessionLog) -> None:
    try:
        sessions.open()
    except OSError as exc:  # a read-only mount, a full disk
        raise CaptureInputError(f"--out {sessions.path}: cannot write it ({exc.strerror or exc})") from None


IMPORTS = {  # subcommand: (what it reads, its importer)
    "import-otel": ("an OTLP JSON trace export (resourceSpans...)", import_export),
    "import-litellm": (
        "LiteLLM's StandardLoggingPayload or SpendLogs records (JSON array or lines)",
        import_logs,
    ),
}


def import_file(command: str, argv: list[str]) -> int:
    """`import-otel SPANS.json --out FILE`, `import-litellm LOGS.jsonl --out FILE`: calls seen elsewhere
    as a session file."""
    what, importer = IMPORTS[command]
    parser = argparse.ArgumentParser(
        prog=f"python -m kit.capture {command}", description=f"{what} -> a session file"
    )
    parser.add_argument("file", help=what)
    parser.add_argument("--out", required=True, help="the session file to write (must not exist)")
    parser.add_argument(
        "--max-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse an input larger than this (default {DEFAULT_MAX_BYTES // 2**20} MiB: a JSON document "
        "is parsed whole, several times its size in memory)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        sessions, formed = importer(Path(args.file), out, args.max_bytes)
    except SessionImportError as exc:
        sys.stderr.write(f"kit.capture: error: {exc}\n")
        return exit_codes.BAD_INPUT
    except (RecursionError, MemoryError) as exc:  # a shape past what any reader here foresaw
        sys.stderr.write(
            f"kit.capture: error: {args.file}: too large or nested to read ({type(exc).__name__})\n"
        )
        return exit_codes.BAD_INPUT
    sys.stdout.write(
        f"kit.capture: {sessions.calls} calls in {len(sessions.sessions)} sessions written to {out}\n"
        f"kit.capture: {formed}\n"
    )
    return exit_codes.OK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in IMPORTS:
        return import_file(argv[0], argv[1:])
    logging.basicConfig(level=logging.INFO, format="kit.capture: %(message)s", stream=sys.stderr)
    args = parse_args(argv)
    try:
        host, port, out = checked(args)
    except CaptureInputError as exc:
        sys.stderr.write(f"kit.capture: error: {exc}\n")
        return exit_codes.BAD_INPUT
    sessions = SessionLog(out, args.upstream)
    try:
        asyncio.run(serve(args.upstream, f"{host}:{port}", sessions, args.session_header))
    except CaptureInputError as exc:
        sys.stderr.write(f"kit.capture: error: {exc}\n")
        return exit_codes.BAD_INPUT
    finally:
        sessions.close()
    tools = f" ({sessions.tool_calls} MCP tool calls)" if sessions.tool_calls else ""
    sys.stdout.write(
        f"kit.capture: {sessions.calls} calls{tools} in {len(sessions.sessions)} sessions written to {out}\n"
    )
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
