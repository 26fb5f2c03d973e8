"""A minimal client of the OpenClaw gateway's WebSocket RPC (protocol 4), for the session calls its HTTP
API lacks (sessions.list, sessions.delete). It signs the connect challenge with a throwaway Ed25519 device.

Protocol only: no rows, no Locust. The gateway pairs a new device silently only on loopback without an
Origin header (OpenClaw docs: gateway/pairing.md, "Silent local pairing"); elsewhere pairing needs approval.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from urllib.parse import urlsplit, urlunsplit

import websocket
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

PROTOCOL = 4
ROLE = "operator"
SCOPES = ("operator.admin", "operator.read", "operator.write")  # sessions.delete needs operator.admin
CLIENT = {"id": "cli", "version": "loadkit", "platform": "linux", "mode": "cli"}


class OpenClawRpcError(Exception):
    """A refused connect or a failed call; the message is one line."""


def ws_url(http_url: str) -> str:
    """The gateway's WebSocket URL: same host and port as its HTTP API (they share one listener)."""
    parts = urlsplit(http_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, "/", "", ""))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class OpenClawRpc:
    """One connected operator session: `call(method, params)` returns the payload or raises."""

    def __init__(self, http_url: str, token: str | None, timeout_s: float = 10.0) -> None:
        try:
            # no Origin header: a browser origin disables silent local pairing
            self.ws = websocket.create_connection(ws_url(http_url), timeout=timeout_s, suppress_origin=True)
        except (OSError, websocket.WebSocketException) as exc:
            raise OpenClawRpcError(f"cannot open {ws_url(http_url)}: {exc}") from None
        key = Ed25519PrivateKey.generate()  # one device per connection, never written anywhere
        raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.device_id = hashlib.sha256(raw).hexdigest()
        try:
            challenge = self._next_event("connect.challenge")
            self.call("connect", self._connect_params(key, _b64url(raw), challenge, token or ""))
        except OpenClawRpcError:
            self.close()
            raise

    def _connect_params(self, key: Ed25519PrivateKey, public_key: str, challenge: dict, token: str) -> dict:
        signed = [
            "v2",
            self.device_id,
            CLIENT["id"],
            CLIENT["mode"],
            ROLE,
            ",".join(SCOPES),
            str(challenge["ts"]),
            token,
            challenge["nonce"],
        ]
        device = {
            "id": self.device_id,
            "publicKey": public_key,
            "signature": _b64url(key.sign("|".join(signed).encode())),
            "signedAt": challenge["ts"],
            "nonce": challenge["nonce"],
        }
        return {
            "minProtocol": PROTOCOL,
            "maxProtocol": PROTOCOL,
            "client": CLIENT,
            "role": ROLE,
            "scopes": list(SCOPES),
            "caps": [],
            "auth": {"token": token} if token else {},
            "device": device,
        }

    def call(self, method: str, params: dict) -> dict:
        request_id = str(uuid.uuid4())
        self._send({"type": "req", "id": request_id, "method": method, "params": params})
        while True:
            frame = self._receive()
            if frame.get("type") == "res" and frame.get("id") == request_id:
                break
        if not frame.get("ok"):
            error = frame.get("error") or {}
            raise OpenClawRpcError(f"{method}: {error.get('code')} {error.get('message')}")
        return frame.get("payload") or {}

    def _next_event(self, name: str) -> dict:
        while True:
            frame = self._receive()
            if frame.get("type") == "event" and frame.get("event") == name:
                return frame.get("payload") or {}

    def _send(self, frame: dict) -> None:
        try:
            self.ws.send(json.dumps(frame))
        except (OSError, websocket.WebSocketException) as exc:
            raise OpenClawRpcError(f"send failed: {exc}") from None

    def _receive(self) -> dict:
        try:
            return json.loads(self.ws.recv())
        except (OSError, ValueError, websocket.WebSocketException) as exc:
            raise OpenClawRpcError(f"receive failed: {exc}") from None

    def forget_device(self) -> None:
        """Remove this connection's device pairing from the gateway (the gateway closes the socket after)."""
        try:
            self.call("device.pair.remove", {"deviceId": self.device_id})
        finally:
            self.close()

    def close(self) -> None:
        try:
            self.ws.close()
        except (OSError, websocket.WebSocketException):
            pass
