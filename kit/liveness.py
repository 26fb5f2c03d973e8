"""Is the target still alive? Its pids (started by the kit or named with --target-pid) and its health
endpoint, checked about once a second (an MCP server, which has none: MCP itself, agents/mcp/probe.py,
unless --health-path names one); the side sampler's own death is noted for the record.

Decides only death and describes it: stopping the run is the caller's (kit/runtime.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import psutil

from agents.base import auth_headers, shared_tls_context
from agents.mcp.probe import McpPing
from agents.wire.target_origin import with_userinfo
from contract import gevent_compat  # noqa: F401 - before any httpx client exists
from contract.csv_tail import last_sample_row
from contract.http_probe import probe_get
from kit.settings import KitSettings
from lifecycle.target import Target

CHECK_EVERY_S = 1.0
NEVER_ANSWERED = "target never answered"  # how a death reason starts when no HTTP answer ever came


@dataclass
class Liveness:
    """Dead when a pid is gone, or the health URL has failed (error, non-2xx, no answer) without a
    break for `timeout_s` seconds; a frozen (SIGSTOPped) gateway is caught by the second rule."""

    pids: list[int]
    health_url: str | None
    timeout_s: float
    any_answer: bool = False  # no health path: any HTTP answer from the bare URL counts as alive
    mcp: McpPing | None = None  # an MCP server's probe, instead of the health URL
    key_env: str | None = None  # the variable of the key the probe carries (the agents' own)
    answered: bool = False  # it gave an HTTP answer once (at the start's check, or to a probe)
    failing_since: float | None = None
    _procs: dict[int, psutil.Process] = field(default_factory=dict)
    _client: httpx.Client | None = None

    def dead(self, now: float) -> str | None:
        """Why the target counts as dead now, or None while it is alive."""
        for pid in self.pids:
            gone = self._gone(pid)
            if gone:
                return gone
        if not self.health_url or self.timeout_s <= 0:
            return None
        failure = self.mcp.probe() if self.mcp is not None else self._probe()
        if failure is None:
            self.failing_since = None
            return None
        if self.failing_since is None:
            self.failing_since = now
        if now - self.failing_since >= self.timeout_s:
            stalled = f"{self.timeout_s:g} s ({failure}){self._frozen()}"
            if not self.answered:
                return f"{NEVER_ANSWERED} at {self.health_url} in {stalled}"
            return f"target not healthy at {self.health_url} for {stalled}"
        return None

    def _gone(self, pid: int) -> str | None:
        try:
            proc = self._procs.setdefault(pid, psutil.Process(pid))
            if proc.status() != psutil.STATUS_ZOMBIE:
                return None
        except psutil.NoSuchProcess:
            pass
        return f"target pid {pid} is gone"

    def close(self) -> None:
        if self.mcp is not None:
            self.mcp.close()
        if self._client is not None:
            self._client.close()
            self._client = None

    def _probe(self) -> str | None:
        if self.health_url is None:
            return None
        try:
            client = self.client()
            response = probe_get(client, self.health_url, client.timeout.read or CHECK_EVERY_S)
        except httpx.HTTPError as exc:
            return type(exc).__name__
        self.answered = True
        return None if response.status < 300 or self.any_answer else f"HTTP {response.status}"

    def client(self) -> httpx.Client:
        """One client for every probe: a new one per probe (`httpx.get`) builds a TLS context, ~10-50 ms
        of CPU that holds the gevent loop once a second, and every stream read meanwhile waits."""
        if self._client is None:
            timeout = min(2.0, max(self.timeout_s / 2, 0.2))
            headers = auth_headers(self.key_env)
            self._client = httpx.Client(timeout=timeout, verify=shared_tls_context(), headers=headers)
        return self._client

    def _frozen(self) -> str:
        stopped = [p for p, proc in self._procs.items() if _status(proc) == psutil.STATUS_STOPPED]
        return f"; pid {stopped[0]} is stopped (SIGSTOP)" if stopped else ""


def _status(proc: psutil.Process) -> str | None:
    try:
        return proc.status()
    except psutil.Error:
        return None


def sampler_stop(samples_csv, exit_code: int | None, start_ts: float | None) -> dict:
    """Where samples stop, for run.json's `sampler`: the last row's time and why the sampler ended."""
    row = last_sample_row(samples_csv) or {}
    ts = _float(row.get("ts"))
    return {
        "stopped_at_ts": ts,
        "stopped_at_s": round(ts - start_ts, 1) if ts is not None and start_ts else None,
        "stopped_reason": row.get("event") or f"sampler exited with code {exit_code}",
    }


def _float(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def liveness_of(
    settings: KitSettings, target: Target, on_probe_session: Callable[[str | None], None]
) -> Liveness:
    """The target's pids (the kit's own and those named with --target-pid) and the health endpoint of
    any target with a URL; an MCP server's is MCP itself unless --health-path names a path (its probe's
    open session told to `on_probe_session`)."""
    pids = ([target.pid] if target.pid else []) + list(settings.agent.target_pid)
    health_path = settings.target.health_path
    url = with_userinfo(target.url, settings.target.host_auth)  # a gateway behind Basic auth
    health = f"{url}{health_path}" if target.url else None
    answered = target.started_by_kit or settings.target.host_check  # both waited for an answer first
    timeout = settings.target.liveness_timeout
    mcp = None
    if settings.preset.calls_mcp and not health_path and target.url:
        mcp = McpPing(settings.agent, target.url, min(2.0, max(timeout / 2, 0.2)), on_probe_session)
        health, answered = mcp.url, True  # the start's MCP session answered (kit/mcp_start.py)
    key_env = settings.agent.api_key_env
    return Liveness(pids, health, timeout, not health_path, answered=answered, mcp=mcp, key_env=key_env)
