"""The mock LLM's own count of the model calls it answered: per call, per conversation and in total, served
at GET /v1/sim/calls as the truth a test compares a gateway's agent loop with.

Bounded memory (the last calls and conversations only). Must not change what the model answers. Each
call carries a sequence number and its time, so a reader polling `?after=SEQ` (the kit's model_calls.csv)
takes every call once and knows from a gap in the numbers how many fell out of the log before it looked.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from simgateway.conversation import Conversation
from simgateway.tool_wire import WireCall
from simgateway.usage import Tokens

RECENT_CALLS = 1000
KNOWN_CONVERSATIONS = 10_000
FIRST_USER_CHARS = 200  # how much of a conversation's first user message the log keeps to name it
RESULT_CHARS = 80  # how much of each tool result the log keeps: enough to tell whose result it was


def conversation_key(first_user: str) -> str:
    """A conversation's name across its steps: a hash of its first user message."""
    return hashlib.sha1(first_user.encode("utf-8", "replace")).hexdigest()[:16]


@dataclass
class CallLog:
    recent: deque[dict] = field(default_factory=lambda: deque(maxlen=RECENT_CALLS))
    conversations: OrderedDict[str, dict] = field(default_factory=OrderedDict)
    calls: int = 0
    tool_calls: int = 0

    def add(
        self,
        api: str,
        response_id: str,
        conv: Conversation,
        calls: list[WireCall],
        tokens: Tokens,
        caller: str | None = None,
        cost_usd: float = 0.0,
        wire: dict | None = None,
    ) -> None:
        """Count one answered model call (chat or responses) with the tool calls it made; `caller` is the
        request's `user` field, `cost_usd` the call's price at the simulator's own price knobs, `wire` how
        it was asked (stream, stream_options: what a replay must send as recorded)."""
        key = conversation_key(conv.first_user)
        self.calls += 1
        self.tool_calls += len(calls)
        entry = self.conversations.pop(key, None) or {
            "key": key,
            "first_user": conv.first_user[:FIRST_USER_CHARS],
            "calls": 0,
            "tool_calls": 0,
        }
        entry["calls"] += 1
        entry["tool_calls"] += len(calls)
        self.conversations[key] = entry
        if len(self.conversations) > KNOWN_CONVERSATIONS:
            self.conversations.popitem(last=False)
        self.recent.append(
            {
                "seq": self.calls,
                "ts": time.time(),
                "caller": caller,
                "cached_tokens": tokens.cached,
                "cost": cost_usd,  # at the simulator's price knobs
                "id": response_id,
                "api": api,
                "conversation": key,
                "first_user": entry["first_user"],
                "turn_user": conv.turn_user[:FIRST_USER_CHARS],
                "step": conv.step,
                "prompt_tokens": tokens.prompt,
                "completion_tokens": tokens.completion,
                "tools_offered": list(conv.offered),
                "tool_calls": [{"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls],
                "tool_results": [r[:RESULT_CHARS] for r in conv.last_results],
                **(wire or {}),
            }
        )

    def as_json(self) -> dict:
        return {
            "totals": {"calls": self.calls, "tool_calls": self.tool_calls},
            "conversations": list(self.conversations.values()),
            "calls": list(self.recent),
        }

    def since(self, after: int) -> dict:
        """What a reader polling the log needs: the totals and the recent calls numbered above `after`."""
        return {
            "totals": {"calls": self.calls, "tool_calls": self.tool_calls},
            "calls": [c for c in self.recent if c["seq"] > after],
        }
