"""What a model request says: its history, the tools it offers, and which step of an agent loop it is.

Pure reading of a chat-completions or Responses body (no clock, no I/O), so the scripted model can stay
stateless: the step is counted from the conversation itself. Must not decide the answer (scripted.py does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Conversation:
    """One request's view of its conversation. A *turn* starts after the assistant's last answer in text
    (or at the start): its *steps* are the model calls of the agent loop that answers it, one per
    assistant message with tool calls since, + 1. Not the last user message: gateways insert user
    messages inside a loop (OpenClaw adds its context after tool results)."""

    texts: tuple[str, ...]  # what the prompt count covers: messages, tool calls and results, tool schemas
    said: str  # the messages' text alone (no schemas), what a script's `says` is searched in
    first_user: str  # the first user message: names the conversation across its steps
    turn_user: str = ""  # the user message that opened this turn: whose turn it is (a background call's own)
    offered: dict[str, dict] = field(default_factory=dict)  # tool name -> its parameters' JSON schema
    tool_choice: str = "auto"  # auto, none or required (a forced tool is `forced`)
    forced: str | None = None
    parallel: bool = True  # the request's parallel_tool_calls (absent: allowed)
    step: int = 1
    called: tuple[str, ...] = ()  # tools already called in this turn, in order
    last_results: tuple[str, ...] = ()  # the tool results since the history's last assistant message


def _content_texts(content: object) -> list[str]:
    """A message's content: a string, or a list of text parts (chat `text`, Responses `input_text`)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def _schemas(tools: object, nested: bool) -> dict[str, dict]:
    """Tool name -> parameters, from chat's `{"type": "function", "function": {...}}` (nested) or the
    Responses API's flat `{"type": "function", "name": ...}`. Tools of other types are not callable here."""
    if not isinstance(tools, list):
        return {}
    offered = {}
    for tool in tools:
        spec = tool.get("function") if nested and isinstance(tool, dict) else tool
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            params = spec.get("parameters")
            offered[spec["name"]] = params if isinstance(params, dict) else {}
    return offered


def _choice(value: object, nested: bool) -> tuple[str, str | None]:
    """(mode, forced tool name) from a `tool_choice` in either API's spelling."""
    if isinstance(value, str) and value in ("auto", "none", "required"):
        return value, None
    if isinstance(value, dict):
        spec = value.get("function") if nested else value
        name = spec.get("name") if isinstance(spec, dict) else None
        if isinstance(name, str):
            return "required", name
    return "auto", None


@dataclass
class _Reader:
    """Accumulates texts and the current turn's steps while a history is walked in order."""

    texts: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    first_user: str | None = None
    turn_user: str | None = None  # the first user message since the assistant's last answer in text
    steps: int = 0
    called: list[str] = field(default_factory=list)
    in_calls: bool = False  # the Responses API: consecutive function_call items are one step
    results: list[str] = field(default_factory=list)  # the tool results since the last assistant message

    def message(self, role: object, content: object, calls: bool = False) -> None:
        """A message; an assistant's without tool calls is an answer, which ends the turn."""
        texts = _content_texts(content)
        self.texts += texts
        self.said += texts
        self.in_calls = False
        if role == "user" and self.first_user is None:
            self.first_user = "\n".join(texts)
        if role == "user" and self.turn_user is None:
            self.turn_user = "\n".join(texts)
        if role == "assistant":
            self.results = []
        if role == "assistant" and not calls:
            self.steps, self.called, self.turn_user = 0, [], None

    def calls(self, calls: list[tuple[object, object]], new_step: bool) -> None:
        """Tool calls the assistant made (name, arguments); `new_step` when they open a new step."""
        self.steps += 1 if new_step else 0
        self.results = [] if new_step else self.results
        for name, arguments in calls:
            self.texts += [
                str(name or ""),
                arguments if isinstance(arguments, str) else json.dumps(arguments),
            ]
            self.called.append(str(name or ""))

    def result(self, output: object) -> None:
        texts = _content_texts(output) if not isinstance(output, str) else [output]
        self.texts += texts
        self.results.append("\n".join(texts))
        self.in_calls = False

    def done(self, body: dict, offered: dict[str, dict], nested: bool) -> Conversation:
        """The conversation read; the tool schemas lead the prompt, as providers place them (so a prefix
        cache sees them first)."""
        if offered:
            self.texts.insert(0, json.dumps(body.get("tools"), separators=(",", ":")))
        mode, forced = _choice(body.get("tool_choice"), nested)
        return Conversation(
            texts=tuple(self.texts),
            said="\n".join(self.said),
            first_user=self.first_user or "",
            turn_user=self.turn_user or self.first_user or "",
            offered=offered,
            tool_choice=mode,
            forced=forced,
            parallel=body.get("parallel_tool_calls") is not False,
            step=self.steps + 1,
            called=tuple(self.called),
            last_results=tuple(self.results),
        )


def chat_conversation(body: dict) -> Conversation:
    """A /v1/chat/completions body; ValueError with a one-line reason when `messages` is not a list."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    reader = _Reader()
    for m in messages:
        if not isinstance(m, dict):
            reader.message(None, m)
            continue
        role = m.get("role")
        if role == "tool":
            reader.result(m.get("content"))
            continue
        calls = m.get("tool_calls") if role == "assistant" else None
        reader.message(role, m.get("content"), calls=bool(calls))
        if isinstance(calls, list) and calls:
            named = [c.get("function") or {} for c in calls if isinstance(c, dict)]
            reader.calls([(f.get("name"), f.get("arguments", "")) for f in named], new_step=True)
    return reader.done(body, _schemas(body.get("tools"), nested=True), nested=True)


def responses_conversation(body: dict) -> Conversation:
    """A /v1/responses body: `instructions`, then `input` (a string, or message and function-call items)."""
    items = body.get("input", "")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise ValueError("'input' must be a string or a list")
    reader = _Reader()
    if isinstance(body.get("instructions"), str):
        reader.message("system", body["instructions"])
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            reader.calls([(item.get("name"), item.get("arguments", ""))], new_step=not reader.in_calls)
            reader.in_calls = True
        elif kind == "function_call_output":
            reader.result(item.get("output"))
        elif isinstance(item, dict):
            reader.message(item.get("role"), item.get("content"))
        else:
            reader.message(None, item)
    return reader.done(body, _schemas(body.get("tools"), nested=False), nested=False)
