"""Streamed tool calls reassembled: OpenAI chat-completion `delta.tool_calls` fragments and Responses API
function-call events, into whole calls (id, name, arguments text) in the order the model made them.

Pure and fast (a few dict operations per chunk: it runs inside the stream reader, on the timed path);
it never parses the arguments itself (ToolCall.parsed does, on demand) and never opens a connection.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from contract.schema import FIRST_TOKEN_CONTENT, FIRST_TOKEN_TOOL_CALL

RESPONSE_CALL_ADDED = "response.output_item.added"
RESPONSE_ARGS_DELTA = "response.function_call_arguments.delta"
RESPONSE_ARGS_DONE = "response.function_call_arguments.done"
RESPONSE_CALL_DONE = "response.output_item.done"


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text as the model wrote it

    def parsed(self) -> dict | None:
        """The arguments as a JSON object; None when the model wrote something else."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


@dataclass
class _Draft:
    call_id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Collects one streamed answer's tool-call fragments.

    Chat deltas are keyed by their `index` (OpenAI sends id, type and name once, in a call's first delta,
    then arguments alone); a gateway that omits `index` is followed by `id` (a new id opens a call, no id
    continues the last one). Id and name are kept from their first non-empty value (some gateways repeat
    them in every delta); argument fragments are concatenated in arrival order.
    """

    __slots__ = ("_drafts", "_by_id", "_last")

    def __init__(self) -> None:
        self._drafts: dict[object, _Draft] = {}
        self._by_id: dict[str, object] = {}
        self._last: object = None

    def __bool__(self) -> bool:
        return bool(self._drafts)

    def add_chat(self, tool_calls: list) -> None:
        """One chunk's `choices[0].delta.tool_calls` list."""
        for delta in tool_calls:
            key = self._key(delta.get("index"), delta.get("id"))
            draft = self._drafts.get(key)
            if draft is None:
                draft = self._drafts[key] = _Draft()
            if not draft.call_id and delta.get("id"):
                draft.call_id = delta["id"]
                self._by_id[draft.call_id] = key
            function = delta.get("function")
            if function:
                if not draft.name and function.get("name"):
                    draft.name = function["name"]
                piece = function.get("arguments")
                if piece:
                    draft.parts.append(piece)
            self._last = key

    def _key(self, index: object, call_id: object) -> object:
        if index is not None:
            return index
        if isinstance(call_id, str) and call_id:
            return self._by_id.get(call_id, ("id", call_id))
        return self._last if self._last is not None else 0

    def add_response_event(self, kind: str | None, data: dict) -> bool:
        """One Responses API event; True when it was a function-call token (a call named, or an
        argument fragment), which is what the stream's time to first token counts."""
        if kind == RESPONSE_ARGS_DELTA:
            self._last = data.get("item_id")
            self._drafts.setdefault(self._last, _Draft()).parts.append(data.get("delta") or "")
            return True
        item = data.get("item") or {}
        if kind == RESPONSE_CALL_ADDED:
            if item.get("type") != "function_call":
                return False
            # a gateway that sends the call whole (OpenClaw) puts its arguments here and no fragments
            draft = _Draft(item.get("call_id") or "", item.get("name") or "", [item.get("arguments") or ""])
            self._last = item.get("id")
            self._drafts[self._last] = draft
            return True
        if kind == RESPONSE_ARGS_DONE:  # the whole arguments text: trust it over the fragments
            draft = self._drafts.setdefault(data.get("item_id"), _Draft())
            draft.parts = [data.get("arguments") or ""]
        elif (
            kind == RESPONSE_CALL_DONE
            and item.get("type") == "function_call"
            and item.get("id") in self._drafts
        ):
            self._drafts[item["id"]].parts = [item.get("arguments") or ""]  # the item whole, at its end
        return False

    @property
    def last_key(self) -> object:
        """The key of the call the last fragment went to (a Responses item's id): `call_id_of` names it."""
        return self._last

    def call_id_of(self, key: object) -> str:
        draft = self._drafts.get(key)
        return draft.call_id if draft is not None else ""

    def calls(self) -> list[ToolCall]:
        """The whole calls in the model's order: by chat `index`, else as their first fragment arrived."""
        drafts = list(self._drafts.values())
        indexes = [k for k in self._drafts if isinstance(k, int)]
        if len(indexes) == len(drafts):
            drafts = [self._drafts[k] for k in sorted(indexes)]
        return [ToolCall(d.call_id, d.name, "".join(d.parts)) for d in drafts]


def message_calls(messages: list[dict]) -> list[ToolCall]:
    """The tool calls of non-streamed chat messages (`message.tool_calls`)."""
    calls = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            calls.append(
                ToolCall(call.get("id", ""), function.get("name", ""), function.get("arguments", ""))
            )
    return calls


def output_calls(output: list[dict]) -> list[ToolCall]:
    """The `function_call` items of a non-streamed Responses API output."""
    return [
        ToolCall(item.get("call_id", ""), item.get("name", ""), item.get("arguments", ""))
        for item in output
        if item.get("type") == "function_call"
    ]


def chat_token_kind(chunk: dict, calls: ToolCallAssembler) -> str | None:
    """Which generated token a chat chunk carries, if any: `content` (text) or `tool_call` (a call's
    fragment, handed to `calls`). A role-only or empty chunk carries none."""
    kind = None
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if not delta:
            continue
        if delta.get("content"):
            kind = FIRST_TOKEN_CONTENT
        fragments = delta.get("tool_calls")
        if fragments:
            calls.add_chat(fragments)
            kind = kind or FIRST_TOKEN_TOOL_CALL
    return kind
