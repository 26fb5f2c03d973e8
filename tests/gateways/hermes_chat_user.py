"""A user's script on the `openai` package talking to Hermes Agent's API server: one conversation of a few
turns, its history resent each turn (Hermes runs the tools itself, so only text comes back). Run as:

    python tests/gateways/hermes_chat_user.py BASE_URL API_KEY TURNS

Prints one JSON line: the usage Hermes reported for each turn (prompt and completion tokens).
"""

from __future__ import annotations

import json
import sys

from openai import OpenAI

QUESTIONS = ("Plan a short trip to Lisbon.", "Add a day in Sintra.", "Now list it as three bullet points.")


def turn(client: OpenAI, messages: list[dict]) -> dict:
    """One streamed turn: the answer appended to `messages`; its usage returned."""
    text: list[str] = []
    usage: dict = {}
    for chunk in client.chat.completions.create(
        model="hermes-agent", messages=messages, stream=True, stream_options={"include_usage": True}
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            usage = {"prompt": chunk.usage.prompt_tokens, "completion": chunk.usage.completion_tokens}
    messages.append({"role": "assistant", "content": "".join(text)})
    return usage


def main() -> None:
    base, key, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = OpenAI(base_url=base.rstrip("/") + "/v1", api_key=key, max_retries=0)
    messages: list[dict] = [{"role": "system", "content": "You are a travel planner."}]
    usage = []
    for question in QUESTIONS[:turns]:
        messages.append({"role": "user", "content": question})
        usage.append(turn(client, messages))
    print(json.dumps({"usage": usage}))


if __name__ == "__main__":
    main()
