"""LiteLLM's own logs of a proxy's calls turned into a session file, the one the recorder writes (its own
SessionLog), so sessions a LiteLLM proxy already logged replay like recorded ones.

Two record kinds, told apart per record: the `StandardLoggingPayload` LiteLLM hands every logging
integration (one object per call, `litellm/types/utils.py`; `id`, `trace_id`, float `startTime`...), and
a SpendLogs row (`SpendLogsPayload`, `litellm/proxy/_types.py`; `request_id`...), as `GET /spend/logs`
returns them or the table is exported. A SpendLogs row carries the messages only where the proxy ran with
`store_prompts_in_spend_logs` (its `proxy_server_request` is the request body then; `messages` stays
`{}` for chat calls). The file is a JSON array of records or JSON Lines.

Only the fields named here are read (times, session keys, model, messages, the request parameters kept,
the answer, token counts): never `api_key`, hashed keys, headers or other metadata. A chat call that is not
one (no times, end before start, no messages) stops the import with one line naming the file, the record
and the field; the file appears whole or not at all.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capture.exchange import chat_answer
from capture.import_input import DEFAULT_MAX_BYTES, documents
from capture.session_log import (
    SessionImportError,
    SessionLog,
    chat_message,
    check_out,
    conversation_of,
    origin_of,
    write_imported,
)
from contract.schema import SESSION

CHAT_CALL_TYPES = ("completion", "acompletion")
SESSIONS_RULE = (
    "sessions: LiteLLM's session_id, else a shared trace_id, else the end user, else the first user message"
)
# the request parameters a session file keeps: what shapes the call, never a credential or a header
REQUEST_KEYS = (
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "stream",
    "stream_options",
)


class LiteLLMImportError(SessionImportError):
    """Logs that cannot become a session file: the message is the one line the user sees."""


@dataclass(frozen=True)
class LoggedCall:
    """One chat call LiteLLM logged, read: when it ran, its session's keys, the request and the answer."""

    where: str  # file:line (JSON Lines) or file: record [i] (an array), and the call's id
    start_s: float
    end_s: float
    keys: tuple[str | None, str | None, str | None]  # (session id, trace id, end user) as logged
    api_base: str | None
    request: dict[str, Any]
    answer: dict[str, Any]
    session: str = ""  # decided once every call is read (a trace id names a session only if shared)


def read_logs(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[LoggedCall]:
    """Every chat call of the file, in start order, each with its session; LiteLLMImportError on the
    first record that is not one."""
    calls = [_call(record, where) for record, where in _records(path, max_bytes) if _is_chat(record)]
    if not calls:
        raise LiteLLMImportError(f"{path}: no chat call (call_type 'completion' or 'acompletion')")
    shared = Counter(c.keys[1] for c in calls)
    named = [replace(c, session=_named(c.keys, shared) or conversation_of(c.request)) for c in calls]
    return sorted(named, key=lambda c: c.start_s)


def _named(keys: tuple[str | None, str | None, str | None], shared: Counter) -> str | None:
    """LiteLLM's session id, else a trace id more than one call shares (`litellm_session_id` sets it; alone
    it is a per-call uuid), else the end user; else None: the conversation names it."""
    session, trace, user = keys
    return session or (trace if trace and shared[trace] > 1 else None) or user


def _records(path: Path, max_bytes: int) -> Iterator[tuple[dict, str]]:
    """(record, where) of a JSON array (where: `file: record [i]`) or of JSON Lines (`file:line`)."""
    for where, value in documents(path, max_bytes):
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield _object(item, f"{path}: record [{i}]"), f"{path}: record [{i}]"
        else:
            yield _object(value, where), where


def _object(record: object, where: str) -> dict:
    if not isinstance(record, dict):
        raise LiteLLMImportError(f"{where}: expected a JSON object (one logged call)")
    return record


def _is_chat(record: dict) -> bool:
    """A successful chat call; other call types (embeddings...) are passed over, and so is a failed call:
    it holds no answer to replay, and its error text may quote a key."""
    return record.get("call_type") in CHAT_CALL_TYPES and record.get("status", "success") == "success"


def _call(record: dict, where: str) -> LoggedCall:
    spend_row = "request_id" in record
    if not spend_row and not ("id" in record and "trace_id" in record):
        raise LiteLLMImportError(
            f"{where}: neither a StandardLoggingPayload (id, trace_id) nor a SpendLogs row (request_id)"
        )
    where = f"{where} ({record.get('request_id' if spend_row else 'id')})"
    start, end = _time(record, "startTime", where), _time(record, "endTime", where)
    if end < start:
        raise LiteLLMImportError(f"{where}: endTime: ends before it starts ({end} < {start})")
    sent = _spend_request(record, where) if spend_row else _logged_request(record, where)
    stream = sent.get("stream") is True or record.get("stream") is True
    first = _seconds(record.get("completionStartTime")) if stream else None
    answer = _answer(record, _json(record.get("response"), dict) or {}, start, end, first)
    user = _text(record.get("end_user")) or _text(
        _dict(record.get("metadata")).get("user_api_key_end_user_id")
    )
    session, trace = _text(record.get("session_id")), _text(record.get("trace_id"))
    if spend_row:  # a SpendLogs row's session_id is LiteLLM's trace id (or a per-call uuid)
        session, trace = None, session
    return LoggedCall(where, start, end, (session, trace, user), _text(record.get("api_base")), sent, answer)


def _json(value: object, kind: type) -> Any:
    """A field LiteLLM logs as a value or as its JSON text (SpendLogs), when it is of `kind`; else None."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, kind) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _time(record: dict, key: str, where: str) -> float:
    seconds = _seconds(record.get(key))
    if seconds is None:
        raise LiteLLMImportError(f"{where}: {key} {record.get(key)!r}: expected epoch seconds or an ISO time")
    return seconds


def _seconds(value: object) -> float | None:
    """Epoch seconds from LiteLLM's float (StandardLoggingPayload) or ISO 8601 time (SpendLogs; UTC when
    it names no zone, as LiteLLM stores it)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _logged_request(record: dict, where: str) -> dict[str, Any]:
    """A StandardLoggingPayload's request: the model asked for, its messages and model_parameters."""
    model = record.get("model_group") or record.get("model")
    return _request(model, record.get("messages"), _dict(record.get("model_parameters")), where, "messages")


def _spend_request(record: dict, where: str) -> dict[str, Any]:
    """A SpendLogs row's request: its proxy_server_request (the body as sent, with
    store_prompts_in_spend_logs), else its messages (kept there for realtime calls only)."""
    body = _json(record.get("proxy_server_request"), dict) or {}
    if body.get("messages"):
        messages, field = body["messages"], "proxy_server_request.messages"
    else:
        messages, field = _json(record.get("messages"), list), "proxy_server_request.messages (or messages)"
    model = body.get("model") or record.get("model_group") or record.get("model")
    return _request(model, messages, body, where, field)


def _request(model: object, messages: object, parameters: dict, where: str, field: str) -> dict[str, Any]:
    chat = [chat_message(m) for m in messages] if isinstance(messages, list) else []
    if not chat or not all(chat):
        hint = (
            " (a SpendLogs row keeps them only with store_prompts_in_spend_logs)" if "proxy" in field else ""
        )
        raise LiteLLMImportError(f"{where}: {field}: no chat messages{hint}")
    request: dict[str, Any] = {"model": model, "messages": chat}
    request |= {k: parameters[k] for k in REQUEST_KEYS if k in parameters}
    return request


def _answer(record: dict, response: dict, start: float, end: float, first: float | None) -> dict:
    """What the recorder keeps of an answer: usage (LiteLLM's counts), latency, time to first token (a
    stream's completionStartTime), the answer's message."""
    counts = {k: record.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    usage = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
    ttft = None if first is None or first < start else round((first - start) * 1000.0, 3)
    answer = {"status": 200, SESSION.latency_ms: round((end - start) * 1000.0, 3), SESSION.ttft_ms: ttft}
    return answer | chat_answer(response) | {"usage": usage or None}


def upstream_of(calls: list[LoggedCall]) -> str:
    """The header's upstream: `litellm://` and the first deployment api_base's host (never its path or
    userinfo), else `litellm://unknown`."""
    base = next((c.api_base for c in calls if c.api_base and "://" in c.api_base), None)
    return "litellm://" + (origin_of(base).split("://", 1)[1] if base else "unknown")


def import_logs(path: Path, out: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[SessionLog, str]:
    """Write the file's chat calls to `out` as a session file, whole or not at all; (its log, the line
    saying how its sessions were formed)."""
    check_out(out)
    calls = read_logs(path, max_bytes)
    return write_imported(out, upstream_of(calls), calls), SESSIONS_RULE
