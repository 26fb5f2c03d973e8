"""The tool runs a gateway reports of its own agent loop, on the stream it answers with. A gateway that runs
the tools itself sends the client no tool call to run, so without these a turn that ran three tools would
read "0 tool calls". One table, event kind → the tool calls that event says the gateway ran:

- Hermes Agent's chat stream: `event: hermes.tool.progress` with `status: running`, once per call;
- Hermes' runs events: `tool.started`;
- the Responses API (Hermes' /v1/responses): a `function_call_output` item done (its `function_call` ran
  before the answer, so the client has none to run), or a hosted tool's call item done (`mcp_call`...);
- A2A (agents built on Google's ADK): a status update whose message carries a data part of metadata
  `adk_type: function_response`, one per tool result.

Pure: it takes an event's kind and data. Each call is named by its call id ("" where the event gives none).
"""

from __future__ import annotations

from collections.abc import Callable

HERMES_CHAT_PROGRESS = "hermes.tool.progress"
HERMES_RUN_TOOL_STARTED = "tool.started"
RESPONSE_ITEM_DONE = "response.output_item.done"
A2A_STATUS_UPDATE = "a2a.status-update"  # the kit's kind for A2A's TaskStatusUpdateEvent (gateways/a2a.py)
RESPONSE_TOOL_OUTPUT = "function_call_output"
# the Responses API's tools the server runs itself (OpenAI's hosted tools)
RESPONSE_HOSTED_CALLS = frozenset(
    {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call"}
)
A2A_TOOL_RESULT = "function_response"  # ADK's data-part type of a tool's result (its A2A part converter)
A2A_PART_TYPE_KEYS = ("adk_type", "type")  # ADK for Python prefixes its metadata keys, ADK for Java does not


def gateway_tool_runs(kind: str | None, data: object) -> tuple[str, ...]:
    """The tool calls this event says the gateway ran itself; empty for every other event. An event named
    only in its data (`{"event": "tool.started"}`) counts as named."""
    if not isinstance(data, dict):
        return ()
    name = kind if kind in _READERS else data.get("event")
    reader = _READERS.get(name) if isinstance(name, str) else None
    return reader(data) if reader is not None else ()


def response_item_runs(item: object) -> tuple[str, ...]:
    """A Responses output item that says the server ran a tool: a function call's output (the call named
    by its `call_id`) or a hosted tool's call."""
    if not isinstance(item, dict):
        return ()
    if item.get("type") == RESPONSE_TOOL_OUTPUT:
        return (str(item.get("call_id") or ""),)
    return ("",) if item.get("type") in RESPONSE_HOSTED_CALLS else ()


def a2a_message_runs(message: object) -> tuple[str, ...]:
    """The tool results in an A2A message's parts (0.3 and 1.0 spell a data part alike but for `kind`)."""
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return ()
    return tuple(_part_call_id(p) for p in parts if _part_type(p) == A2A_TOOL_RESULT)


def _part_type(part: object) -> object:
    metadata = part.get("metadata") if isinstance(part, dict) else None
    if not isinstance(metadata, dict):
        return None
    return next((metadata[k] for k in A2A_PART_TYPE_KEYS if k in metadata), None)


def _part_call_id(part: dict) -> str:
    data = part.get("data")
    return str(data.get("id") or "") if isinstance(data, dict) else ""


def _hermes_progress(data: dict) -> tuple[str, ...]:
    return (str(data.get("toolCallId") or ""),) if data.get("status") == "running" else ()


def _a2a_status(data: dict) -> tuple[str, ...]:
    status = data.get("status")
    return a2a_message_runs(status.get("message")) if isinstance(status, dict) else ()


_READERS: dict[str, Callable[[dict], tuple[str, ...]]] = {
    HERMES_CHAT_PROGRESS: _hermes_progress,
    HERMES_RUN_TOOL_STARTED: lambda _data: ("",),
    RESPONSE_ITEM_DONE: lambda data: response_item_runs(data.get("item")),
    A2A_STATUS_UPDATE: _a2a_status,
}
