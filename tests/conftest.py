"""Shared fixtures: a simulated gateway started per test with given knobs, always stopped after."""

from __future__ import annotations

import pytest

from simgateway import launch


@pytest.fixture
def simulator():
    """Factory: `simulator("--ttft-ms", "300")` -> a running gateway (url, pid); all stopped at teardown."""
    started: list[launch.RunningGateway] = []

    def start(*knobs: str) -> launch.RunningGateway:
        gateway = launch.start(list(knobs))
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
