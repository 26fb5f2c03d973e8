"""IBM ContextForge (`mcpgateway`, its own virtualenv: requirements-contextforge.txt) offline on a free
loopback port in front of an MCP server: its SQLite database in a temporary folder, its JWT secret made
here and handed over by environment only, the backend registered and a virtual server made through its
admin API. The gateway's own record of open MCP sessions is its `mcp_sessions` table. Nothing asserts.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.gateways.harness import free_port, listening_pid, running_server
from tests.gateways.mcp_runs import BACKEND

CONTEXTFORGE = os.environ.get("LOADKIT_CONTEXTFORGE_BIN") or shutil.which("mcpgateway")
NEEDS_CONTEXTFORGE = [
    pytest.mark.gateways,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not CONTEXTFORGE,
        reason="no mcpgateway executable (set LOADKIT_CONTEXTFORGE_BIN; see docs/gateways.md)",
    ),
]
ADMIN = "admin@example.com"  # the platform admin ContextForge makes at its first start


@dataclass(frozen=True)
class ContextForge:
    url: str
    pid: int  # the uvicorn process serving it, whose tree the sampler reads
    token: str = field(repr=False)  # a JWT for the admin, signed with this gateway's secret
    server_path: str  # the virtual server's MCP endpoint, /servers/ID/mcp
    database: Path

    def open_sessions(self) -> int:
        """The gateway's own count of the MCP sessions it holds (its session registry's table)."""
        with sqlite3.connect(self.database) as db:
            return int(db.execute("SELECT COUNT(*) FROM mcp_sessions").fetchone()[0])


def gateway_env(folder: Path, port: int) -> dict[str, str]:
    """Its settings (mcpgateway/config.py): SQLite in `folder`, stateful sessions (the kit's churn and
    cleanup need an Mcp-Session-Id), the admin API on, loopback backends allowed (SSRF guard), its rate
    limiter off (by default 100 MCP requests a minute per client: the module's third run got 429s),
    fresh secrets so nothing of a default signs a token."""
    return {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "DATABASE_URL": f"sqlite:///{folder / 'mcp.db'}",
        "JWT_SECRET_KEY": secrets.token_urlsafe(32),
        "AUTH_ENCRYPTION_SECRET": secrets.token_urlsafe(32),
        "PLATFORM_ADMIN_EMAIL": ADMIN,
        "PLATFORM_ADMIN_PASSWORD": secrets.token_urlsafe(16),
        "BASIC_AUTH_PASSWORD": secrets.token_urlsafe(16),
        "MCPGATEWAY_UI_ENABLED": "false",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true",
        "USE_STATEFUL_SESSIONS": "true",
        "SSRF_ALLOW_LOCALHOST": "true",
        "RATE_LIMITING_ENABLED": "false",
    }


def admin_token(env: dict[str, str]) -> str:
    """ContextForge's own token tool (its docs' way), signing with the secret in `env`."""
    python = str(Path(str(CONTEXTFORGE)).with_name("python"))
    command = [python, "-m", "mcpgateway.utils.create_jwt_token", "--username", ADMIN, "--exp", "120"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip().splitlines()[-1]


def virtual_server(url: str, token: str, backend_url: str) -> str:
    """Register `backend_url` as a gateway, then a virtual server of every tool it brought: its MCP path."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as admin:
        body = {"name": BACKEND, "url": backend_url, "transport": "STREAMABLEHTTP"}
        gateway = admin.post("/gateways", json=body).raise_for_status().json()
        tools = admin.get("/tools").raise_for_status().json()
        ids = [t["id"] for t in tools if t.get("gatewayId") == gateway["id"]]
        server = {"server": {"name": "loadkit", "associated_tools": ids}}
        made = admin.post("/servers", json=server).raise_for_status().json()
    return f"/servers/{made['id']}/mcp"


@contextmanager
def contextforge_gateway(backend_url: str, folder: Path) -> Iterator[ContextForge]:
    """ContextForge on a free port fronting the MCP server at `backend_url`; always stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = gateway_env(folder, port)
    command = [str(CONTEXTFORGE), "--host", "127.0.0.1", "--port", str(port)]
    with running_server(command, "/health", port, timeout_s=120, env=env) as url:
        token = admin_token(env)
        path = virtual_server(url, token, backend_url)
        yield ContextForge(url, listening_pid(port), token, path, folder / "mcp.db")
