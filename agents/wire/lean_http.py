"""What httpx redoes on every request that an agent's client can do once, or skip when it changes nothing.

Found by profiling the load generator at 100 closed-loop streams (docs/benchmarks.md, "Where the load
generator's CPU goes"): per request httpx re-parses the client's base URL merged with the path (~7 % of the
process's CPU), builds a urllib request to look for cookies in every answer (~3 %), and httpcore, before
reusing a kept-alive connection, asks gevent's emulation of `select.poll` whether the server closed it
(~6 %: a watcher made, started and stopped on the event loop). Each shortcut here gives the same result.
"""

from __future__ import annotations

import select
import socket

import httpx
from gevent import monkey
from httpcore._backends import sync as httpcore_sync

_PLAIN_POLL = monkey.get_original("select", "poll")  # the system call itself, not gevent's emulation
MAX_PATHS = 64  # paths kept per client: an agent's few fixed ones; a task's own (/tasks/ID) grow for ever


class MergedUrls:
    """A client's absolute URL per request path, merged with its base URL once (httpx merges and
    re-parses it on every request given a relative path; an absolute URL it takes as it is). At most
    MAX_PATHS are kept: past them the cache starts again, so paths with a task's id never pile up."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._urls: dict[str, httpx.URL] = {}

    def __call__(self, path: str) -> httpx.URL:
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= MAX_PATHS:
                self._urls.clear()
            url = self._urls[path] = self.client.build_request("GET", path).url
        return url


def cookies_only_when_set(client: httpx.Client) -> None:
    """The client reads cookies only from an answer that sets some (`Set-Cookie`, `Set-Cookie2`: the only
    headers its cookie jar reads); httpx builds a urllib request and response around every answer first."""
    cookies = client.cookies
    extract = cookies.extract_cookies

    def extract_when_set(response: httpx.Response) -> None:
        if "set-cookie" in response.headers or "set-cookie2" in response.headers:
            extract(response)

    vars(cookies)["extract_cookies"] = extract_when_set  # this client's jar only


def socket_readable(sock: socket.socket | None) -> bool:
    """httpcore's readability check (is a kept-alive connection closed by the server?) with the plain
    `poll` system call: with a zero timeout it never blocks, so it needs no gevent watcher."""
    fd = None if sock is None else sock.fileno()
    if fd is None or fd < 0:
        return True  # no socket: as if its next read would return the end
    poller = _PLAIN_POLL()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def use_plain_poll() -> None:
    """Give httpcore's sync backend `socket_readable` (a no-op where that backend has no such check)."""
    if hasattr(httpcore_sync, "is_socket_readable"):
        httpcore_sync.is_socket_readable = socket_readable
