"""Network namespaces standing in for separate hosts: each joined by a veth pair to a bridge in a hub
namespace, on a private /24 (10.200.X.0/24). Holds no tests.

Only what this module creates is touched: namespaces named after the test process, removed afterwards
(also on failure; removing a namespace removes its links). Skips the test when namespaces are not
permitted here.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

SUBNET = "10.200.{}.{}"


@dataclass(frozen=True)
class Host:
    """A namespace and its address on the test LAN."""

    netns: str
    address: str

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside this namespace."""
        return ["ip", "netns", "exec", self.netns, *argv]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)


def _permitted() -> str | None:
    """None when `ip netns add` works here, else why not (the skip reason)."""
    probe = f"lkprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"network namespaces not permitted here: {getattr(exc, 'stderr', '') or exc}".strip()
    _ip("netns", "del", probe)
    return None


@contextmanager
def lan(*names: str) -> Iterator[dict[str, Host]]:
    """Namespaces `names` on one private LAN; yields name -> Host; removes them all afterwards."""
    reason = _permitted()
    if reason:
        pytest.skip(reason)
    tag = f"lk{os.getpid()}"
    third = 20 + os.getpid() % 200  # namespaces are private: the subnet only needs to be unique per LAN
    hub = f"{tag}hub"
    created = [hub]
    try:
        _ip("netns", "add", hub)
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "link", "set", "br0", "up")
        hosts = {}
        for i, name in enumerate(names, start=1):
            netns = f"{tag}{name}"
            _ip("netns", "add", netns)
            created.append(netns)
            _ip("link", "add", f"p{i}", "netns", hub, "type", "veth", "peer", "name", "eth0", "netns", netns)
            _ip("-n", hub, "link", "set", f"p{i}", "master", "br0", "up")
            address = SUBNET.format(third, i)
            _ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", netns, "link", "set", "eth0", "up")
            _ip("-n", netns, "link", "set", "lo", "up")
            hosts[name] = Host(netns, address)
        yield hosts
    finally:
        for netns in reversed(created):
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, timeout=10)
