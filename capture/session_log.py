"""The session file a recording writes: JSON Lines, a header line naming the format and the upstream's
origin (never its credentials), then one line per model call or MCP tool call, each written whole and
flushed as its response ends, so a recorder stopped at any moment leaves only whole lines.

Which session a call belongs to, its step within the session and the think time before it are decided
here: the agent's own session header or `user` field where it sends one, else its conversation (a hash
of the first user message, which an agent loop resends every step), else a Responses chain
(`previous_response_id`). An MCP tool call joins the session whose model asked it (same tool, same
arguments), so a replay has the agent's tool calls in order between its model calls.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol
from urllib.parse import urlsplit

from contract.redact import redact_object
from contract.schema import SESSION, SESSION_FORMAT, SESSION_MCP_API

FIRST_USER_CHARS = 4000  # enough of the first user message to tell conversations apart
ASKED_KEPT = 1000  # model-asked tool calls an MCP tools/call may still be joined to
NAME_JOINS = "_.-/:"  # what an agent puts between its server's prefix and an MCP tool's name


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL, its userinfo, path and query left out."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def first_user_text(body: dict) -> str:
    """The first user message's text of a chat or Responses request ('' when it has none)."""
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return items[:FIRST_USER_CHARS]
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("role") == "user":
            return _text(item.get("content"))[:FIRST_USER_CHARS]
    return ""


def arguments_key(arguments: object) -> str | None:
    """Tool-call arguments (a JSON object, or the JSON text of one, as a model answers them) in one
    spelling, so the model's ask and the agent's MCP call compare equal; None if they are not an object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return None
    return json.dumps(arguments, sort_keys=True) if isinstance(arguments, dict) else None


def names_tool(asked: str, name: str) -> bool:
    """Whether the model's tool name is the MCP tool's, bare or after a server prefix (`docs__search`)."""
    return asked == name or (asked.endswith(name) and asked[-len(name) - 1 : -len(name)] in NAME_JOINS)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def conversation_of(body: dict) -> str:
    """A session named by its conversation: a hash of the first user message, resent every step."""
    digest = hashlib.sha1(first_user_text(body).encode("utf-8", "replace")).hexdigest()
    return f"conversation-{digest[:12]}"


@dataclass
class _Session:
    steps: int = 0
    last_end: float | None = None  # when its previous response ended (epoch seconds)


@dataclass
class SessionLog:
    """Appends the calls of one recording to `path`; one instance per recorder process."""

    path: Path
    upstream: str
    started: float = field(default_factory=time.time)
    sessions: dict[str, _Session] = field(default_factory=dict)
    by_response: dict[str, str] = field(default_factory=dict)  # Responses id -> its session
    # (session, tool name, arguments_key) of each tool call a model answer asked, newest last
    asked: deque[tuple[str, str, str]] = field(default_factory=lambda: deque(maxlen=ASKED_KEPT))
    by_mcp_session: dict[str, str] = field(default_factory=dict)  # Mcp-Session-Id -> the session it joined
    calls: int = 0
    tool_calls: int = 0  # of `calls`, the MCP tool calls
    _out: IO[str] | None = None

    def open(self) -> None:
        self._out = self.path.open("x", encoding="utf-8")  # never over another recording
        header = {
            "format": SESSION_FORMAT,
            "upstream": origin_of(self.upstream),
            SESSION.started_ts: self.started,
        }
        self._write(header)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()

    def session_of(self, body: dict, named: str | None) -> str:
        if named:
            return named
        if isinstance(body.get("user"), str) and body["user"]:
            return body["user"]
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in self.by_response:
            return self.by_response[previous]
        return conversation_of(body)

    def session_of_tool_call(self, params: dict, named: str | None, mcp_session: str | None) -> str:
        """An MCP tool call's session: the agent's session header; else the session whose model answer
        asked this very call (the same tool and arguments: the agent running what its model asked), and
        from then on every unmatched call of the same MCP session; else its MCP session's own."""
        if named:
            return named
        key = arguments_key(params.get("arguments"))
        for i in range(len(self.asked) - 1, -1, -1):
            session, asked, arguments = self.asked[i]
            if arguments == key and names_tool(asked, params["name"]):
                del self.asked[i]
                if mcp_session:
                    self.by_mcp_session[mcp_session] = session
                return session
        if mcp_session in self.by_mcp_session:
            return self.by_mcp_session[mcp_session]
        digest = hashlib.sha1((mcp_session or "").encode("utf-8", "replace")).hexdigest()
        return f"mcp-{digest[:12]}"

    def record(self, session: str, sent: float, api: str, request: dict, answer: dict) -> None:
        """One call's line: when it was sent (seconds into the recording), its session and step, the think
        time since the session's previous response ended, the request as sent and the answer."""
        state = self.sessions.setdefault(session, _Session())
        think = None if state.last_end is None else max(0.0, sent - state.last_end) * 1000.0
        ended = sent + (answer.get(SESSION.latency_ms) or 0.0) / 1000.0
        line = {
            "offset_s": round(sent - self.started, 6),
            "session": session,
            "step": state.steps,
            "think_ms": None if think is None else round(think, 3),
            "api": api,
            "request": request,
            "response": answer,
        }
        state.steps += 1
        state.last_end = ended
        response_id = answer.get("id")
        if isinstance(response_id, str):
            self.by_response[response_id] = session
        for call in answer.get("tool_calls") or ():
            key = arguments_key(call.get("arguments"))
            if key is not None and isinstance(call.get("name"), str):
                self.asked.append((session, call["name"], key))
        self.calls += 1
        self.tool_calls += api == SESSION_MCP_API
        self._write(line)

    def _write(self, value: dict) -> None:
        assert self._out is not None, "open() first"
        self._out.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._out.flush()


class SessionImportError(ValueError):
    """Calls seen elsewhere (traces, a gateway's logs) that cannot become a session file: the message is the
    one line the user sees."""


class ImportedCall(Protocol):
    """One call an importer read: its session, when it was sent (epoch seconds), the request and answer."""

    @property
    def session(self) -> str: ...
    @property
    def start_s(self) -> float: ...
    @property
    def request(self) -> dict[str, Any]: ...
    @property
    def answer(self) -> dict[str, Any]: ...


CHAT_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def chat_message(item: object) -> dict:
    """A logged message that is already chat-shaped, its chat keys only (nothing else a log adds)."""
    if not isinstance(item, dict):
        return {}
    return {k: item[k] for k in CHAT_MESSAGE_KEYS if k in item}


def check_out(out: Path) -> None:
    """An import's --out: a new file in an existing folder, checked before the input is read."""
    if out.exists():
        raise SessionImportError(f"--out {out}: exists; an import never overwrites a session file")
    if not out.parent.is_dir():
        raise SessionImportError(f"--out {out}: no such folder {out.parent}")
    if not os.access(out.parent, os.W_OK):
        raise SessionImportError(f"--out {out}: its folder is not writable")


def write_imported(out: Path, upstream: str, calls: Sequence[ImportedCall]) -> SessionLog:
    """`calls` (in start order) as the session file `out`: written to a temporary file beside it first,
    linked to `out` only when whole (never over an existing file), so a failed import leaves nothing."""
    temporary = out.with_name(f".{out.name}.{os.getpid()}.partial")
    sessions = SessionLog(temporary, upstream, started=calls[0].start_s)
    try:
        sessions.open()
        for call in calls:  # the importers read named fields only; a secret nested in them is masked
            request, answer = redact_object(call.request), redact_object(call.answer)
            sessions.record(call.session, call.start_s, "chat", request, answer)
        sessions.close()
        os.link(temporary, out)  # fails, leaving `out` alone, if one appeared meanwhile
    except FileExistsError:
        raise SessionImportError(f"--out {out}: exists; an import never overwrites a session file") from None
    except OSError as exc:  # a read-only mount, a full disk
        raise SessionImportError(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
    finally:
        sessions.close()
        temporary.unlink(missing_ok=True)
    return sessions
