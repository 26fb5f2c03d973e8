"""The chat agent reads the simulator's time to first token back; stock Locust does not.

Truth: when the simulator's first token actually left (GET /v1/sim/streams), which is its --ttft-ms knob on
a quiet machine. Bars: the kit's median error at 10 concurrent streams within 20 ms, with tokens 100 ms
apart so that a kit reading the second token (+100 ms) or the headers (-300 ms, as stock Locust does)
fails; against the knob itself (the simulator's punctuality added) within 25 ms. Measured on this shared
2-core VM with nothing else running: +4 to +6 ms at some hours, +12 to +16 ms at others (the VM's CPU speed
varies: a 10 M-iteration Python loop took 1.48 s then). Each bar is widened by the scheduling delay
measured around the reading and 10 ms per core other processes kept busy meanwhile
(tests/machine_noise.py), never beyond half the error the reading must catch (the cap: 50 ms, half the
second-token error; 150 ms, half the headers' error; 10 ms, half the ITL knob); readings are of streams
sent once every agent runs (spawning holds the process's loop), and a reading spoiled by a burst of
outside load is taken again, up to three times, then skipped with the noise measured if it stayed over
the cap.
"""

from __future__ import annotations

import statistics

import httpx
import pytest
from locust import HttpUser, constant, task

from agents.gateways.openai_chat import ChatAgent
from tests.gateways.harness import agent_user
from tests.locust_users import collect
from tests.machine_noise import NoiseWindow, judge, retake

pytestmark = pytest.mark.e2e

TTFT_MS = 300
STREAMS = 10
# Measured here (2 cores): with one core kept busy by other processes the median error grew from +4-6 ms
# to +12-17 ms, the kit and the simulator sharing the other core; the bar widens by this per busy core.
BUSY_CORE_MS = 10.0
ERROR_BAR_MS = 20.0
KNOB_BAR_MS = 25.0  # the simulator's own punctuality adds to the kit's error (its own test allows 15 ms)
GAP_ITL_MS = 100  # the tokens' spacing in the error test: the second token is this much late


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


def chat_records(gateway) -> tuple[list, NoiseWindow]:
    noise = NoiseWindow()
    events = collect(QuickChatAgent, gateway.url, STREAMS, count=3 * STREAMS, steady=True)
    noise.close()
    records = [e["context"]["kit_record"] for e in events]
    assert all(r.ok for r in records), [r.error for r in records if not r.ok]
    return records, noise


@pytest.mark.timing
def test_chat_agent_ttft_is_within_20ms_of_when_the_first_token_left_at_10_concurrent_streams(simulator):
    gateway = simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", str(GAP_ITL_MS), "--output-tokens", "10")

    def error() -> list:
        records, noise = chat_records(gateway)
        streams = httpx.get(f"{gateway.url}/v1/sim/streams").json()["streams"]
        left = {s["id"]: s["first_token_ms"] for s in streams}
        error = statistics.median(r.ttft_ms - left[r.request_id] for r in records)
        assert error >= 0, f"the kit read the first token {-error:.1f} ms before it left"
        assert {r.chunks for r in records} == {10}
        what = f"median TTFT error (n={len(records)})"
        return [noise.reading(what, error, ERROR_BAR_MS, GAP_ITL_MS / 2, per_busy_core_ms=BUSY_CORE_MS)]

    assert all(r.passed for r in judge(retake(error)))


@pytest.mark.timing
def test_chat_agent_ttft_and_itl_read_back_the_knobs(simulator):
    gateway = simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", "20", "--output-tokens", "10")

    def deviations() -> list:
        records, noise = chat_records(gateway)
        itl = statistics.median(r.itl_ms_mean for r in records)
        ttft = statistics.median(r.ttft_ms for r in records)
        return [
            noise.reading(
                f"median TTFT - {TTFT_MS} ms", ttft - TTFT_MS, KNOB_BAR_MS, TTFT_MS / 2, BUSY_CORE_MS
            ),
            noise.reading("median ITL - 20 ms", itl - 20, 5, 20 / 2, per_busy_core_ms=BUSY_CORE_MS / 2),
        ]

    assert all(r.passed for r in judge(retake(deviations)))


def test_a_chat_agent_sends_its_streams_over_one_connection(simulator, tmp_path):
    """Left unread after `[DONE]`, a stream's connection closes and every next request pays a new
    connect (and a resolver thread) on its timed path: +10 ms of TTFT at 10 closed-loop streams here."""
    gateway = simulator("--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "3")
    with agent_user(ChatAgent, gateway.url, tmp_path) as user:
        for _ in range(4):
            user.chat_stream()
    streams = httpx.get(f"{gateway.url}/v1/sim/streams").json()["streams"]
    assert len(streams) == 4 and len({s["client_port"] for s in streams}) == 1, streams


@pytest.mark.timing
def test_stock_locust_reports_time_to_headers_not_to_first_token(simulator):
    gateway = simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", "20", "--output-tokens", "10")
    events = collect(StockLocustStreamUser, gateway.url, STREAMS, count=STREAMS)
    stock = statistics.median(e["response_time"] for e in events)
    assert stock < TTFT_MS / 3, f"stock Locust median {stock:.1f} ms: expected time to headers"
