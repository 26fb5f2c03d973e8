"""The chat agent reads the simulator's time to first token back; stock Locust does not.

Truth: the simulator's --ttft-ms knob. Tolerance: median within 10 ms at 10 concurrent streams.
"""

from __future__ import annotations

import statistics

from locust import HttpUser, constant, task

from agents.openai_chat import ChatAgent
from tests.locust_users import collect

TTFT_MS = 300
STREAMS = 10


class QuickChatAgent(ChatAgent):
    wait_time = constant(0.1)


class StockLocustStreamUser(HttpUser):
    """What a plain Locust user measures for a stream: time to response headers."""

    wait_time = constant(0.1)

    @task
    def stream(self):
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with self.client.post("/v1/chat/completions", json=body, stream=True, name="stock") as response:
            for _ in response.iter_lines():
                pass


def test_chat_agent_ttft_matches_the_knob_within_10ms_at_10_concurrent_streams(simulator):
    gateway = simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", "20", "--output-tokens", "10")
    events = collect(QuickChatAgent, gateway.url, STREAMS, count=3 * STREAMS)
    records = [e["context"]["kit_record"] for e in events]
    assert all(r.ok for r in records), [r.error for r in records if not r.ok]
    ttft = statistics.median(r.ttft_ms for r in records)
    assert abs(ttft - TTFT_MS) <= 10, f"median TTFT {ttft:.1f} ms vs knob {TTFT_MS} ms (n={len(records)})"
    itl = statistics.median(r.itl_ms_mean for r in records)
    assert abs(itl - 20) <= 5, f"median inter-token latency {itl:.1f} ms vs knob 20 ms"
    assert {r.chunks for r in records} == {10}


def test_stock_locust_reports_time_to_headers_not_to_first_token(simulator):
    gateway = simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", "20", "--output-tokens", "10")
    events = collect(StockLocustStreamUser, gateway.url, STREAMS, count=STREAMS)
    stock = statistics.median(e["response_time"] for e in events)
    assert stock < TTFT_MS / 3, f"stock Locust median {stock:.1f} ms: expected time to headers"
