"""A real agent, as users write them with the `openai` package: tools offered every call, each tool call
answered with a result, the history resent until the model answers in text. Run as a script:

    python tests/capture/openai_agent.py BASE_URL TASKS [--no-stream]

Prints one JSON line: the time to first token of every streamed call (ms) and the steps per task.
"""

from __future__ import annotations

import json
import sys
import time

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a fact up.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]
API_KEY = "sk-capture-test-secret-0123456789"  # the recording must never hold it


def run_task(client: OpenAI, n: int, stream: bool, ttfts: list[float]) -> int:
    messages: list[dict] = [
        {"role": "system", "content": "You are a careful research agent."},
        {"role": "user", "content": f"Task {n}: find three facts about gateways and summarise them."},
    ]
    for step in range(1, 20):
        calls, text = call(client, messages, stream, ttfts)
        if not calls:
            messages.append({"role": "assistant", "content": text})
            return step
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            messages.append(
                {"role": "tool", "tool_call_id": c["id"], "content": f"result of {c['id']}: " + "x" * 300}
            )
    return 20


def call(client: OpenAI, messages: list[dict], stream: bool, ttfts: list[float]) -> tuple[list[dict], str]:
    if not stream:
        reply = client.chat.completions.create(model="sim-model", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        calls = [c.model_dump(exclude_none=True) for c in message.tool_calls or []]
        return calls, message.content or ""
    started = time.perf_counter()
    calls: dict[int, dict] = {}
    text: list[str] = []
    first = None
    for chunk in client.chat.completions.create(
        model="sim-model", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}
    ):
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is None:
            continue
        if first is None and (delta.content or delta.tool_calls):
            first = time.perf_counter()
        text.append(delta.content or "")
        for part in delta.tool_calls or []:
            entry = calls.setdefault(
                part.index, {"type": "function", "function": {"name": "", "arguments": ""}}
            )
            entry["id"] = part.id or entry.get("id")
            if part.function and part.function.name:
                entry["function"]["name"] = part.function.name
            if part.function and part.function.arguments:
                entry["function"]["arguments"] += part.function.arguments
    if first is not None:
        ttfts.append((first - started) * 1000.0)
    return [calls[i] for i in sorted(calls)], "".join(text)


def main() -> None:
    base, tasks = sys.argv[1], int(sys.argv[2])
    stream = "--no-stream" not in sys.argv
    client = OpenAI(base_url=base.rstrip("/") + "/v1", api_key=API_KEY, max_retries=0)
    ttfts: list[float] = []
    steps = [run_task(client, n, stream, ttfts) for n in range(tasks)]
    print(json.dumps({"ttft_ms": ttfts, "steps": steps}))


if __name__ == "__main__":
    main()
