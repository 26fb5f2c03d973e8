"""A test gateway that runs its own agent loop, as Hermes Agent and OpenClaw do: each chat request it gets
becomes `--inner-calls` calls to its model (the history grown by a tool result each time), answered with
the last call's text, under its own response id and with the inner calls' usage summed; and every
`--background-every` seconds it makes one call of its own that no client asked for (a memory review).
GET /stats says how many of each it made: the truths the model's side of a run is read against.

    python tests/gateways/looping_gateway.py --upstream URL [--inner-calls 3] [--background-every 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys

import aiohttp
from aiohttp import web

READY = "looping gateway listening on "


class Gateway:
    def __init__(self, upstream: str, inner: int, background_every: float) -> None:
        self.upstream, self.inner, self.every = upstream.rstrip("/"), inner, background_every
        self.stats = {"requests": 0, "inner_calls": 0, "background_calls": 0}
        self.ids = itertools.count(1)
        self.client: aiohttp.ClientSession | None = None

    async def call_model(self, messages: list[dict]) -> dict:
        assert self.client is not None
        body = {"model": "sim-model", "messages": messages, "max_tokens": 5}
        async with self.client.post(f"{self.upstream}/v1/chat/completions", json=body) as answer:
            return await answer.json()

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.stats["requests"] += 1
        history, usage, last = list(body["messages"]), {"prompt_tokens": 0, "completion_tokens": 0}, {}
        for step in range(self.inner):
            last = await self.call_model(history)
            self.stats["inner_calls"] += 1
            for key in usage:
                usage[key] += last["usage"][key]
            history += tool_step(step)
        text = last["choices"][0]["message"]["content"]
        rid = f"gw-{next(self.ids)}"
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            return web.json_response({"id": rid, "choices": [choice], "usage": usage})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for word in text.split(" "):
            chunk = {"id": rid, "choices": [{"index": 0, "delta": {"content": word + " "}}]}
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        final = {"id": rid, "choices": [], "usage": usage}
        await resp.write(b"data: " + json.dumps(final).encode() + b"\n\ndata: [DONE]\n\n")
        return resp

    async def background(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self.call_model([{"role": "user", "content": "Review the memory of the last sessions."}])
            self.stats["background_calls"] += 1

    async def health(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def report(self, _: web.Request) -> web.Response:
        return web.json_response(self.stats)


def tool_step(step: int) -> list[dict]:
    """A step of the loop as a real gateway's is: the model's tool call and its result (an answer in text
    would end the turn; the model's side reads the next call as a turn of the gateway's own)."""
    call = {"id": f"call-{step}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": f"result {step}"},
    ]


async def serve(args: argparse.Namespace) -> None:
    gateway = Gateway(args.upstream, args.inner_calls, args.background_every)
    gateway.client = aiohttp.ClientSession()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", gateway.chat)
    app.router.add_get("/health", gateway.health)
    app.router.add_get("/stats", gateway.report)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    if args.background_every > 0:
        asyncio.get_running_loop().create_task(gateway.background())
    sys.stdout.write(f"{READY}http://127.0.0.1:{runner.addresses[0][1]}\n")
    sys.stdout.flush()
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--inner-calls", type=int, default=3)
    parser.add_argument("--background-every", type=float, default=0.0)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
