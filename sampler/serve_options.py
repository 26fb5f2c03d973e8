"""Options of `python -m sampler serve`: the reading options of `python -m sampler` plus where to listen,
which environment variable holds the token, and how many rows to keep. Validation only, no sockets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sampler.options import OneLineParser, SamplerOptions, UsageError, add_reading_options, validate

DEFAULT_PORT = 9107
DEFAULT_TOKEN_ENV = "LOADKIT_SAMPLER_TOKEN"
MIN_TOKEN_CHARS = 16
DEFAULT_KEEP_ROWS = 86_400  # a day at 1 Hz; ~1 KiB a row


@dataclass(frozen=True)
class ServeOptions:
    sampler: SamplerOptions
    bind: str
    port: int
    token: str  # read from the environment; never printed
    keep_rows: int


def parse_serve(argv: list[str], environ: dict[str, str] | None = None) -> ServeOptions:
    """Parse and validate; raises UsageError with a one-line message (never one that holds the token)."""
    p = OneLineParser(prog="python -m sampler serve", description="Sampler service: serves rows over HTTP.")
    p.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1 only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any)")
    p.add_argument("--token-env", default=DEFAULT_TOKEN_ENV, help="environment variable holding the token")
    p.add_argument("--keep-rows", type=int, default=DEFAULT_KEEP_ROWS, help="rows kept for readers")
    add_reading_options(p)
    args = vars(p.parse_args(argv))
    bind, port, token_env, keep = (args.pop(k) for k in ("bind", "port", "token_env", "keep_rows"))
    sampler = SamplerOptions(out="", **args)
    validate(sampler)
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535, got {port}")
    if keep < 1:
        raise UsageError(f"--keep-rows must be >= 1, got {keep}")
    token = (os.environ if environ is None else environ).get(token_env, "")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"${token_env} must hold the service token (>= {MIN_TOKEN_CHARS} characters)")
    return ServeOptions(sampler=sampler, bind=bind, port=port, token=token, keep_rows=keep)
