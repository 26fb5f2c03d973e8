"""TTFT through the kit's whole run (its sampler, health checks, judge, row files: everything that shares
the load generator's process), closed loop with no think time at 10 streams: the median error against
when each first token actually left the simulator is within 5 ms on a quiet machine.

Truth: the simulator's own log of when each stream's first token left (GET /v1/sim/streams), by request
id. The bar is widened by the scheduling delay measured around the run and 10 ms per core other
processes kept busy (tests/machine_noise.py, as the agent's own TTFT tests), capped at 6 ms (half the
error before the fixes); a reading spoiled by a burst of outside load is taken again, up to three times,
and one the noise could explain is skipped, never passed. Measured here before the fixes: +12 ms (a TLS
context built by every health check; a new connection per stream); after: +0.7 to +2.6 ms.
"""

from __future__ import annotations

import httpx
import pandas as pd
import pytest

from contract import schema
from tests.locust_runs import REPO, run_locust
from tests.machine_noise import NoiseWindow, Take, judge, retake

pytestmark = [pytest.mark.e2e, pytest.mark.timing]
QUIET_BAR_MS = 5.0
CAP_MS = 6.0  # half the error this test exists to catch (+12 ms before the fixes, the table)
BUSY_CORE_MS = 10.0
STREAMS = 10
SETTLED_S = 2.0  # requests sent after every stream runs (spawning holds the loop)


def test_closed_loop_ttft_at_10_streams_is_within_5ms_of_when_the_first_token_left(simulator, tmp_path):
    gateway = simulator("--ttft-ms", "200", "--itl-ms", "20", "--output-tokens", "16")
    attempts = iter(range(3))

    def error_and_bar() -> Take:
        run_dir = tmp_path / f"run{next(attempts)}"
        load = ("-f", str(REPO / "examples" / "closed_loop.py"), "ClosedLoopChatAgent", "--host", gateway.url)
        noise = NoiseWindow((gateway.pid,))
        done = run_locust(run_dir, *load, "-u", str(STREAMS), "-r", str(STREAMS), "-t", "10s", timeout=120)
        noise.close()
        assert done.returncode == 0, done.stderr[-2000:]
        rows = pd.read_csv(run_dir / schema.REQUESTS_CSV)
        rows = rows[rows["ts"] >= rows["ts"].min() + SETTLED_S]
        left = {
            s["id"]: s["first_token_ms"] for s in httpx.get(f"{gateway.url}/v1/sim/streams").json()["streams"]
        }
        errors = rows["ttft_ms"] - rows["request_id"].map(left)
        assert errors.notna().sum() >= 100
        assert errors.median() >= 0, f"the kit read first tokens {-errors.median():.1f} ms before they left"
        what = "median TTFT after the first token left"
        return [noise.reading(what, float(errors.median()), QUIET_BAR_MS, CAP_MS, BUSY_CORE_MS)]

    assert all(r.passed for r in judge(retake(error_and_bar)))
