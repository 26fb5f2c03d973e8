"""The mock LLM's HTTP endpoints: OpenAI chat completions (plain and SSE) and the Responses API.

Timing is scheduled against one monotonic deadline per request (first token at arrival + ttft, then one
token every itl), never by cumulative sleeps, and every chunk is written as soon as it is due. Token counts
and usage shapes come from usage.py; this module must not compute them itself.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence

from aiohttp import web

from simgateway import tool_wire
from simgateway.calls import CallLog
from simgateway.conversation import Conversation, chat_conversation, responses_conversation
from simgateway.faults import FaultGate
from simgateway.knobs import Knobs
from simgateway.prefix_cache import PrefixCache
from simgateway.scripted import plan_calls
from simgateway.tool_wire import WireCall
from simgateway.usage import Tokens, cost_usd, count_tokens, usage_body

WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do")
DEFAULT_MODEL = "sim-model"
STREAM_LOG_SIZE = 1000  # recent streams whose first-token time GET /v1/sim/streams reports
_ids = itertools.count(1)


def token_text(i: int) -> str:
    """The i-th visible token (0-based): a word, space-prefixed after the first."""
    word = WORDS[i % len(WORDS)]
    return word if i == 0 else " " + word


def reply_text(n: int) -> str:
    return "".join(token_text(i) for i in range(n))


def token_due(t0: float, knobs: Knobs, i: int) -> float:
    """Monotonic time the i-th content token is due for a request that arrived at t0."""
    return t0 + (knobs.ttft_ms + i * knobs.itl_ms) / 1000.0


async def sleep_until(deadline: float) -> None:
    delay = deadline - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


def done_at(t0: float, knobs: Knobs, tokens: Tokens) -> float:
    """When the whole reply is due: the last token's time (the ttft when there are no tokens)."""
    return token_due(t0, knobs, max(tokens.content - 1, 0))


def bad_request(message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=400)


async def read_json(request: web.Request) -> dict:
    """The request body as a JSON object; ValueError with a one-line reason otherwise."""
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError("request body is not JSON") from None
    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    return body


class MockLLM:
    """Handlers for the LLM endpoints; one instance per gateway, holding knobs and the fault gate."""

    def __init__(self, knobs: Knobs, gate: FaultGate) -> None:
        self.knobs = knobs
        self.gate = gate
        # when each recent stream's first token actually left, by response id: the truth a timing test
        # compares a client's TTFT with when the host is too busy for the knob itself to be kept
        self.stream_log: deque[dict] = deque(maxlen=STREAM_LOG_SIZE)
        self.calls = CallLog()  # what the model answered, per call and conversation: GET /v1/sim/calls
        self.prefix_cache = PrefixCache(knobs.prefix_cache_block) if knobs.prefix_cache_block else None

    async def stream_timings(self, _: web.Request) -> web.Response:
        return web.json_response({"streams": list(self.stream_log)})

    async def call_counts(self, request: web.Request) -> web.Response:
        """The whole log, or with `?after=SEQ` only the calls numbered above SEQ (a reader's poll)."""
        after = request.query.get("after")
        if after is None:
            return web.json_response(self.calls.as_json())
        if not after.isdigit():
            return bad_request(f"after={after!r}: expected a call's sequence number")
        return web.json_response(self.calls.since(int(after)))

    def model_for(self, body: dict) -> str:
        return self.knobs.model or body.get("model") or DEFAULT_MODEL

    def cost_headers(self, tokens: Tokens) -> dict[str, str]:
        return (
            {"x-litellm-response-cost": repr(cost_usd(self.knobs, tokens))} if self.knobs.report_cost else {}
        )

    def usage(self, tokens: Tokens, dialect: str | None = None) -> dict:
        body = usage_body(dialect or self.knobs.usage_dialect, tokens)
        if self.knobs.report_cost:
            body["cost"] = cost_usd(self.knobs, tokens)
        return body

    def tokens_for(
        self, texts: Sequence[str], max_tokens: int | None, tool_call_tokens: int | None = None
    ) -> Tokens:
        """The call's token counts under the knobs, its prompt-cache hits included."""
        tokens = count_tokens(self.knobs, texts, max_tokens, tool_call_tokens)
        return tokens if self.prefix_cache is None else self.prefix_cache.apply(tokens, texts)

    async def complete(self, texts: list[str], max_tokens: int | None) -> tuple[str, Tokens]:
        """One non-streamed reply after the full generation time (used by agent prompts too)."""
        t0 = asyncio.get_running_loop().time()
        tokens = self.tokens_for(texts, max_tokens)
        await sleep_until(done_at(t0, self.knobs, tokens))
        return reply_text(tokens.content), tokens

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._admitted(request, chat_conversation, self._chat)

    async def _admitted(self, request: web.Request, read, handle) -> web.StreamResponse:
        """Parse the body (`read` gives its Conversation), refuse beyond the concurrency gate (429), count
        the call in flight while `handle(request, body, conv, stream, t0)` answers. Timed from arrival."""
        t0 = asyncio.get_running_loop().time()
        try:
            body = await read_json(request)
            conv = read(body)
        except ValueError as e:
            return bad_request(str(e))
        stream = bool(body.get("stream"))
        refused = self.gate.refuse("text/event-stream" if stream else "application/json")
        if refused is not None:
            return refused
        self.gate.in_flight += 1
        try:
            return await handle(request, body, conv, stream, t0)
        finally:
            self.gate.in_flight -= 1

    def answer(
        self, api: str, response_id: str, conv: Conversation, body: dict, max_tokens: int | None
    ) -> tuple[list[WireCall], Tokens]:
        """This step's tool calls (none: a text answer) and its token counts, logged as one model call
        with how it was asked (stream, stream_options) and by whom (`user`)."""
        calls = tool_wire.wire_calls(plan_calls(self.knobs, conv), self.knobs.bad_tool_calls)
        ticks = tool_wire.tick_count(calls, self.knobs.tool_arg_fragment_chars) if calls else None
        tokens = self.tokens_for(conv.texts, max_tokens, ticks)
        who = body.get("user") if isinstance(body.get("user"), str) else None
        wire = {"stream": body.get("stream") is True, "stream_options": body.get("stream_options")}
        self.calls.add(api, response_id, conv, calls, tokens, who, cost_usd(self.knobs, tokens), wire)
        return calls, tokens

    async def _chat(self, request: web.Request, body: dict, conv: Conversation, stream: bool, t0: float):
        rid = f"chatcmpl-sim{next(_ids)}"
        calls, tokens = self.answer(
            "chat", rid, conv, body, body.get("max_completion_tokens", body.get("max_tokens"))
        )
        if stream:
            return await self._chat_stream(request, body, rid, calls, tokens, t0)
        await sleep_until(done_at(t0, self.knobs, tokens))
        return web.json_response(self._chat_body(body, rid, calls, tokens), headers=self.cost_headers(tokens))

    def finish_reason(self, calls: list[WireCall], tokens: Tokens) -> str:
        if calls:
            return "tool_calls"
        return "length" if tokens.content < self.knobs.output_tokens else "stop"

    def _chat_body(self, body: dict, rid: str, calls: list[WireCall], tokens: Tokens) -> dict:
        message = (
            tool_wire.chat_message(calls)
            if calls
            else {"role": "assistant", "content": reply_text(tokens.content)}
        )
        return {
            "id": rid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_for(body),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason(calls, tokens),
                }
            ],
            "usage": self.usage(tokens),
        }

    async def _chat_stream(
        self, request: web.Request, body: dict, rid: str, calls: list[WireCall], tokens: Tokens, t0: float
    ):
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        head = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time())}
        head["model"] = self.model_for(body)
        if include_usage:
            head["usage"] = None

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return b"data: " + json.dumps({**head, "choices": [choice]}).encode() + b"\n\n"

        resp = await start_sse(request, self.cost_headers(tokens))
        await resp.write(chunk({"role": "assistant", "content": None if calls else ""}))
        if calls:
            ticks = tool_wire.chat_ticks(calls, self.knobs.tool_arg_fragment_chars)
            await self._write_ticks(resp, request, rid, t0, tokens, [chunk(t) for t in ticks])
        else:
            # token chunks differ only in their text: split one rendered chunk around a marker, once
            before, after = chunk({"content": "\x00"}).split(b'"\\u0000"')
            async for i in self._token_ticks(t0, tokens):
                await resp.write(before + json.dumps(token_text(i)).encode() + after)
                if i == 0:
                    self.log_first_token(rid, t0, request)
        await resp.write(chunk({}, self.finish_reason(calls, tokens)))
        if include_usage:
            final = {**head, "choices": [], "usage": self.usage(tokens)}
            await resp.write(b"data: " + json.dumps(final).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _write_ticks(
        self, resp: web.StreamResponse, request: web.Request, rid: str, t0: float, tokens: Tokens, ticks
    ) -> None:
        """Write pre-rendered ticks (bytes), each at its token's due time; the first is the first token."""
        async for i in self._token_ticks(t0, tokens):
            await resp.write(ticks[i])
            if i == 0:
                self.log_first_token(rid, t0, request)

    def log_first_token(self, response_id: str, t0: float, request: web.Request) -> None:
        """When the first token left, and the client's port (a client that keeps its connection sends
        every stream from one port)."""
        elapsed_ms = (asyncio.get_running_loop().time() - t0) * 1000.0
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.stream_log.append(
            {
                "id": response_id,
                "first_token_ms": round(elapsed_ms, 3),
                "client_port": peer[1] if peer else None,
            }
        )

    async def _token_ticks(self, t0: float, tokens: Tokens) -> AsyncIterator[int]:
        """Yield token indexes each at its due time; with no tokens, still wait the ttft."""
        if tokens.content == 0:
            await sleep_until(token_due(t0, self.knobs, 0))
        for i in range(tokens.content):
            await sleep_until(token_due(t0, self.knobs, i))
            yield i

    async def responses(self, request: web.Request) -> web.StreamResponse:
        """OpenAI Responses API; its usage is always the Responses shape, whatever --usage-dialect says."""
        return await self._admitted(request, responses_conversation, self._respond)

    async def _respond(self, request: web.Request, body: dict, conv: Conversation, stream: bool, t0: float):
        rid = f"resp_sim{next(_ids)}"
        calls, tokens = self.answer("responses", rid, conv, body, body.get("max_output_tokens"))
        if stream:
            return await self._responses_stream(request, body, calls, tokens, t0, rid)
        await sleep_until(done_at(t0, self.knobs, tokens))
        return web.json_response(
            self._response_obj(body, calls, tokens, rid, "completed"), headers=self.cost_headers(tokens)
        )

    def _response_obj(self, body: dict, calls: list[WireCall], tokens: Tokens, rid: str, status: str) -> dict:
        done = status == "completed"
        text = reply_text(tokens.content) if done else ""
        message = {
            "type": "message",
            "id": f"msg_{rid}",
            "status": status,
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        output = [tool_wire.response_item(c, True) for c in calls] if calls else [message]
        return {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": self.model_for(body),
            "output": output if done else [],
            "usage": self.usage(tokens, "responses") if done else None,
        }

    async def _responses_stream(self, request, body: dict, calls: list[WireCall], tokens: Tokens, t0, rid):
        seq = itertools.count()

        def event(kind: str, data: dict) -> bytes:
            payload = {"type": kind, "sequence_number": next(seq), **data}
            return f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()

        def obj(status: str) -> dict:
            return {"response": self._response_obj(body, calls, tokens, rid, status)}

        resp = await start_sse(request, self.cost_headers(tokens))
        await resp.write(event("response.created", obj("in_progress")))
        if calls:
            ticks = tool_wire.responses_ticks(calls, self.knobs.tool_arg_fragment_chars)
            rendered = [b"".join(event(kind, data) for kind, data in tick) for tick in ticks]
            await self._write_ticks(resp, request, rid, t0, tokens, rendered)
        else:
            where = {"item_id": f"msg_{rid}", "output_index": 0, "content_index": 0}
            async for i in self._token_ticks(t0, tokens):
                await resp.write(event("response.output_text.delta", {**where, "delta": token_text(i)}))
            done = {**where, "text": reply_text(tokens.content)}
            await resp.write(event("response.output_text.done", done))
        await resp.write(event("response.completed", obj("completed")))
        await resp.write_eof()
        return resp


async def start_sse(request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
    resp = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **headers}
    )
    await resp.prepare(request)
    return resp
