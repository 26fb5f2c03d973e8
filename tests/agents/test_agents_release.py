"""A released response (agents/wire/reading.py) is freed without the garbage collector."""

from __future__ import annotations

import gc
import weakref

import httpx
import pytest

from agents.wire.reading import release


def answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b"data: {}\n\n")


@pytest.fixture
def client():
    with httpx.Client(base_url="http://gateway.test/api/", transport=httpx.MockTransport(answer)) as made:
        yield made


@pytest.mark.parametrize("released", [True, False])
def test_a_released_response_is_freed_by_reference_counting(client, released):
    gc.disable()
    try:
        with client.stream("GET", "/v1/models") as response:
            response.read()
        if released:
            release(response)
        alive = weakref.ref(response)
        del response
        assert (alive() is None) is released  # unreleased, httpx's cycle keeps it for the collector
    finally:
        gc.enable()
