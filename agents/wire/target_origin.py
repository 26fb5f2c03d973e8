"""Requests stay on the target: an HTTP client of the gateway sends only to the origin (scheme, host,
port) of its base URL, and the userinfo of --host (`http://user:pass@host`) is sent as Basic auth on it.

Builds httpx client options and splits URLs; it sends nothing and never writes a credential anywhere.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import httpx

# A header's name is an HTTP token (RFC 9110); its value may not break the request: no CR, LF or NUL, or
# the header would end early and what follows become another header (or the client refuses every request).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BREAKS = {"\r": "CR", "\n": "LF", "\0": "NUL"}


def header_problem(name: str, value: str | None = None) -> str | None:
    """Why a header cannot be sent as given (None: it can); never shows the value (it may be a key)."""
    if not _TOKEN.fullmatch(name):
        return f"header name {name!r} is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)"
    for char, shown in _BREAKS.items():
        if value is not None and char in value:
            at = value.index(char)
            return f"the {name} header's value has a {shown} character (at {at}): it would split the request"
    return None


class OffTargetError(httpx.RequestError):
    """A request to another origin than the target's, refused before it is sent."""


@dataclass(frozen=True)
class HostCredentials:
    """The userinfo of a URL, percent-decoded; the password never shows in a repr."""

    username: str
    password: str = field(repr=False)

    def basic_token(self) -> str:
        """What a Basic Authorization header carries (a gateway may echo it: the kit masks it too)."""
        return base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


def split_userinfo(url: str) -> tuple[str, HostCredentials | None]:
    """The URL without its userinfo, and the userinfo (None when there is none)."""
    parts = urlsplit(url)
    userinfo, at, host_port = parts.netloc.rpartition("@")
    if not at:
        return url, None
    username, _, password = userinfo.partition(":")
    bare = urlunsplit(parts._replace(netloc=host_port))
    return bare, HostCredentials(unquote(username), unquote(password))


def with_userinfo(url: str, credentials: HostCredentials | None) -> str:
    """The URL with the userinfo put back, for a client that takes auth from its URL (the side
    sampler's queue probe, the health check): the kit masks it wherever the URL is written."""
    if credentials is None:
        return url
    parts = urlsplit(url)
    userinfo = f"{quote(credentials.username, safe='')}:{quote(credentials.password, safe='')}"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{parts.netloc}"))


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def stay_on(base_url: str) -> Callable[[httpx.Request], None]:
    """An httpx request hook refusing any request (an absolute URL, a followed redirect) to another
    origin than `base_url`'s: a load test never leaves the target it was pointed at."""
    origin = _origin(httpx.URL(base_url))

    def check(request: httpx.Request) -> None:
        if _origin(request.url) != origin:
            shown = request.url.copy_with(username=None, password=None)
            raise OffTargetError(f"not sent: {shown} is not on the target ({httpx.URL(base_url)})")

    return check


def path_on(url: str, base_url: str) -> str:
    """Where `url` (a path, or an absolute URL on `base_url`'s origin) is on the target, as a path with
    its query; OffTargetError when it points at another origin (an MCP URL given beside --host)."""
    if url.startswith("/"):
        return url
    given = httpx.URL(url)
    if _origin(given) != _origin(httpx.URL(base_url)):
        shown = given.copy_with(username=None, password=None)
        raise OffTargetError(
            f"{shown} is not on the target ({httpx.URL(base_url)}): give a path, or a URL on it"
        )
    return given.raw_path.decode("ascii") or "/"


def client_options(base_url: str, credentials: HostCredentials | None) -> dict[str, Any]:
    """httpx.Client keyword arguments for a client of the target at `base_url`: the origin guard, and
    Basic auth from --host's userinfo (it takes the place of a bearer key: both use Authorization)."""
    options: dict[str, Any] = {"event_hooks": {"request": [stay_on(base_url)]}}
    if credentials is not None:
        options["auth"] = httpx.BasicAuth(credentials.username, credentials.password)
    return options
