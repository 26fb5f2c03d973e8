"""The agent's HTTP client's per-request shortcuts (agents/wire/lean_http.py) give httpx's own results."""

from __future__ import annotations

import socket

import httpx
import pytest
from httpcore._backends import sync

import agents.base  # noqa: F401 - installs the plain poll, as every agent's process does
from agents.wire.lean_http import MAX_PATHS, MergedUrls, cookies_only_when_set, socket_readable


def answer(request: httpx.Request) -> httpx.Response:
    headers = {"set-cookie": "sticky=a1"} if request.url.path.endswith("/login") else {}
    return httpx.Response(200, headers=headers, content=b"data: {}\n\n")


@pytest.fixture
def client():
    with httpx.Client(base_url="http://gateway.test/api/", transport=httpx.MockTransport(answer)) as made:
        yield made


@pytest.mark.parametrize("path", ["/v1/chat/completions", "v1/responses", "http://gateway.test/other"])
def test_a_merged_url_is_the_one_httpx_merges_each_time(client, path):
    urls = MergedUrls(client)
    assert urls(path) == client.build_request("POST", path).url
    assert urls(path) is urls(path)  # made once


def test_paths_with_a_tasks_id_never_pile_up(client):
    """A task board's poll path names its task: a night of tasks keeps at most MAX_PATHS URLs per agent."""
    urls = MergedUrls(client)
    for n in range(10 * MAX_PATHS):
        assert urls(f"/v1/tasks/{n}") == client.build_request("GET", f"/v1/tasks/{n}").url
    assert 0 < len(urls._urls) <= MAX_PATHS


def test_cookies_set_by_an_answer_are_kept_and_sent_and_others_change_nothing(client):
    cookies_only_when_set(client)
    client.get("/v1/models")
    assert not client.cookies
    client.get("/login")
    assert client.cookies["sticky"] == "a1"
    assert client.build_request("GET", "/v1/models").headers["cookie"] == "sticky=a1"


def test_a_socket_is_readable_when_data_or_its_end_waits_and_not_before():
    ours, theirs = socket.socketpair()
    try:
        assert not socket_readable(ours)
        theirs.send(b"x")
        assert socket_readable(ours)
        ours.recv(1)
        theirs.close()
        assert socket_readable(ours)  # the server closed it: the next read returns the end
    finally:
        ours.close()
    assert socket_readable(None)


def test_httpcore_checks_a_kept_alive_connection_with_the_plain_poll():

    assert sync.is_socket_readable is socket_readable
