"""Input checks that need more than one option's text: run id and run directory, --host and
--sampler-url, the quoting of --target-cmd/--sim-args, --health-path, and --host answering once before
any load.

Each check raises InputError with one line; nothing here creates a file or starts a process.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from agents.wire.target_origin import HostCredentials, OffTargetError, header_problem, path_on, split_userinfo
from contract.cli import command_line
from contract.errors import InputError
from contract.http_probe import probe_get

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
HOST_CHECK_TIMEOUT_S = 5.0
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # host names of this machine: a URL there reaches nothing else


def run_id(text: str) -> str:
    """A run id is a file name and a tag on the gateway: letters, digits, '.', '_', '-' (no '/', no '..')."""
    if not RUN_ID.fullmatch(text) or ".." in text:
        raise InputError(
            f"--run-id {text!r}: use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return text


def run_id_on(text: str, lowercases_keys: bool, gateway: str) -> str:
    """A run id the gateway keeps as given: one that lower-cases session keys would store an upper-case
    id changed, and the kit would never find its own sessions again (to close them)."""
    if lowercases_keys and text != text.lower():
        raise InputError(
            f"--run-id {text!r}: --gateway {gateway} lower-cases session keys, so the run could not find "
            f"its sessions to close them; use a lower-case run id, e.g. {text.lower()!r}"
        )
    return text


def run_dir(path: Path, reuse: bool) -> Path:
    """A fresh run directory: refuse a file, and a non-empty directory unless --reuse-run-dir; one that
    does not exist yet must be creatable (not under a file, not on /proc or a read-only disk)."""
    if path.exists() and not path.is_dir():
        raise InputError(f"--run-dir {path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not reuse:
        raise InputError(
            f"--run-dir {path}: not empty (a second run would mix its rows into it); "
            "choose another or add --reuse-run-dir"
        )
    if not path.is_dir():
        _can_create_under(path)
    return path


def under_root(path: Path, root: Path) -> Path:
    """A run directory the kit named (runs/<run-id>) stays under the runs root: runs/X as a symbolic link
    to another place would write the run there (the user names such a place with --run-dir)."""
    if not path.resolve().is_relative_to(root.resolve()):
        raise InputError(
            f"{path}: leads to {path.resolve()}, outside {root}/ (a symbolic link); name that place with "
            "--run-dir, or choose another --run-id"
        )
    return path


def _can_create_under(path: Path) -> None:
    """Make (and remove) a directory in the nearest existing parent: the run's own mkdir will work."""
    parent = next(p for p in path.absolute().parents if p.exists())
    if not parent.is_dir():
        raise InputError(f"--run-dir {path}: {parent} is a file, not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".loadkit-probe-", dir=parent))
    except OSError as exc:
        raise InputError(
            f"--run-dir {path}: cannot create a directory in {parent} ({exc.strerror})"
        ) from None


def host(url: str | None) -> tuple[str | None, HostCredentials | None]:
    """--host: an http(s) URL with a host name, a trailing '/' dropped; its userinfo (user:password@)
    apart, so that no file or line shows it."""
    if url is None:
        return None, None
    return split_userinfo(http_url("--host", url).rstrip("/"))


def on_target(flag: str, url: str | None, host: str | None) -> None:
    """A URL the agents will call beside --host (--mcp-url, a workload's [tools] mcp) is a path, or an
    http(s) URL on --host's origin (with the embedded simulator, whose port is picked at start: a path)."""
    if not url or url.startswith("/"):
        return
    http_url(flag, url)
    if host is None:
        raise InputError(
            f"{flag} {url}: without --host the kit starts its simulator; give a path (e.g. /mcp)"
        )
    try:
        path_on(url, host)
    except OffTargetError as exc:
        raise InputError(f"{flag}: not sent: {exc}") from None


def on_loopback_or_target(flag: str, url: str | None, host: str | None) -> None:
    """A URL on --host's origin (`on_target`), or an http(s) URL on this machine (127.0.0.1, localhost,
    ::1): no request leaves it."""
    if url and not url.startswith("/") and urlsplit(http_url(flag, url)).hostname in LOOPBACK:
        return
    try:
        on_target(flag, url, host)
    except InputError as exc:
        raise InputError(
            f"{exc} (another origin must be on this machine: 127.0.0.1, localhost, ::1)"
        ) from None


def http_url(flag: str, url: str) -> str:
    """An http(s) URL with a host name, a valid port and no blank or control character (urllib drops
    a newline silently; httpx refuses it mid-run)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port out of range or not a number
    except ValueError as exc:
        raise InputError(f"{flag} {url!r}: {exc} (expected e.g. http://127.0.0.1:8000)") from None
    printable = url.isprintable() and not any(c.isspace() for c in url)
    if parts.scheme not in ("http", "https") or not parts.hostname or not printable:
        raise InputError(f"{flag} {url!r}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000")
    return url


def command(flag: str, text: str | None) -> str | None:
    """A command line given as one string, or none: its quoting must close (shlex splits it later)."""
    return None if text is None else command_line(text, flag)


def program(user: str, flag: str, text: str) -> str:
    """The program a command line starts, found before any load (on PATH, or the executable path given):
    a missing one failed every call of the run, one "No such file" at a time in Locust's error report."""
    words = shlex.split(text)
    if not words or shutil.which(words[0]) is None:
        looked_for = repr(words[0]) if words else "a command"
        raise InputError(
            f"{user} runs {looked_for}, not found on PATH: install it, or give its path with {flag}"
        )
    return text


def headers(api_key_env: str | None, session_header: str | None) -> None:
    """The headers every agent sends, checked before any: the API key's value (named by its variable,
    never shown) and the --session-header name (its value is the session key, made of the run id)."""
    key = os.environ.get(api_key_env) if api_key_env else None
    if key and (problem := header_problem("Authorization", key)):
        raise InputError(f"${api_key_env}: {problem}")
    if session_header and session_header != "user" and (problem := header_problem(session_header)):
        raise InputError(f"--session-header: {problem}")


def health_path(path: str) -> str:
    """'' stays '' (no health check); anything else starts with exactly one '/'."""
    path = path.strip()
    return "/" + path.lstrip("/") if path else ""


def host_answers(url: str, path: str) -> None:
    """One GET before any load: any HTTP answer will do; nothing answering is bad input (exit 2)."""
    try:
        with httpx.Client(timeout=HOST_CHECK_TIMEOUT_S) as client:
            probe_get(client, url + path, HOST_CHECK_TIMEOUT_S)  # any status will do
    except httpx.HTTPError as exc:
        raise InputError(
            f"--host {url}: nothing answers ({type(exc).__name__}); check the address, "
            "or add --no-host-check for a gateway that answers late"
        ) from None


def model_calls_url(url: str | None, host: str | None) -> str | None:
    """--model-calls-url: an http(s) URL on this machine or on --host's host (no request leaves them)."""
    if url is None:
        return None
    url = http_url("--model-calls-url", url)
    where = urlsplit(url).hostname
    allowed = {*LOOPBACK, urlsplit(host).hostname if host else None}
    if where not in allowed:
        raise InputError(f"--model-calls-url {url}: neither on this machine nor on --host's host")
    return url
