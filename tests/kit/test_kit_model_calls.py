"""The model's side of a run: the simulator's own log of the calls it answered, read into model_calls.csv
and joined to the kit's requests. Against the simulator directly every call is the kit's own; behind a
gateway that runs its own loop (3 model calls a request) and works in the background, the report counts
the gateway's calls inside each kit request and those no request made, as the gateway itself counted them."""

from __future__ import annotations

import sys

import httpx
import pandas as pd
import pytest

from analysis.load import load_run
from analysis.model import RunData
from analysis.model_calls import INSIDE, NONE, OWN, join_calls, model_calls_section, model_side
from contract import schema
from contract.exit_codes import OK
from lifecycle.target import free_port
from tests.gateways.harness import running_server
from tests.locust_runs import run_locust
from tests.paths import REPO

FAST = ("--ttft-ms", "20", "--itl-ms", "2", "--output-tokens", "5")
SMOKE = ("ChatAgent", "--load-profile", "smoke", "--peak-users", "2", "--duration", "4s")


@pytest.mark.e2e
def test_against_the_simulator_every_model_call_is_the_kits_own(simulator, tmp_path):
    sim = simulator(*FAST)
    run_dir = tmp_path / "run"
    done = run_locust(run_dir, *SMOKE, "--host", sim.url, "--model-calls-url", sim.url)
    assert done.returncode == OK, done.stderr[-2000:]
    run = load_run(run_dir)
    side = model_side(run)
    assert side is not None and side.missed == 0, run.meta["model_calls"]
    # A request the run's stop cut short may lack a model call (cut before it reached the model), be
    # joined by its id (cut after the answer's id came back) or by its agent's tag and time (INSIDE, cut
    # between): only those.
    cut = run.requests["error_kind"] == schema.ERROR_INTERRUPTED
    made = side.joined["made_by"]
    own = side.joined[made == OWN]["request_id"]
    assert own.is_unique and len(own) > 0, run.meta["model_calls"]  # one call each
    assert set(run.requests[~cut]["request_id"]) <= set(own) <= set(run.requests["request_id"])
    assert (made != NONE).all() and (made == INSIDE).sum() <= cut.sum()
    assert "## Model calls (at the model)" in (run_dir / schema.REPORT_MD).read_text()


@pytest.mark.e2e
def test_behind_a_looping_gateway_the_model_sees_3_calls_a_request_and_the_background_work(
    simulator, tmp_path
):
    sim = simulator(*FAST)
    port = free_port()
    gateway = [sys.executable, str(REPO / "tests" / "gateways" / "looping_gateway.py"), "--port", str(port)]
    gateway += ["--upstream", sim.url, "--inner-calls", "3", "--background-every", "0.5"]
    run_dir = tmp_path / "run"
    with running_server(gateway, "/health", port) as url:
        done = run_locust(run_dir, *SMOKE, "--host", url, "--model-calls-url", sim.url)
        stats = httpx.get(f"{url}/stats").json()
    assert done.returncode == OK, done.stderr[-2000:]
    run = load_run(run_dir)
    side = model_side(run)
    assert side is not None
    made = side.joined["made_by"].value_counts()
    answered = run.requests[run.requests["ok"] == 1]
    assert made.get(OWN, 0) == 0  # the gateway answers under its own ids
    assert made[INSIDE] == 3 * len(answered) == 3 * stats["requests"]
    assert 2 <= made[NONE] <= stats["background_calls"]  # those made while the run was read
    per_request = side.joined[side.joined["made_by"] == INSIDE].groupby("request_id").size()
    assert (per_request == 3).all() and set(per_request.index) == set(answered["request_id"])
    report = (run_dir / schema.REPORT_MD).read_text()
    assert f"| {INSIDE} | {made[INSIDE]} |" in report and f"| {NONE} | {made[NONE]} |" in report


def test_a_call_is_joined_to_the_request_open_when_it_was_answered():
    requests = pd.DataFrame(
        {
            "ts": [10.0, 20.0, 10.0],
            "latency_ms": [5000.0, 1000.0, 1000.0],
            "agent_id": ["a", "a", "b"],
            "request_id": ["r1", "r2", "own-1"],
        }
    )
    calls = pd.DataFrame(
        {
            "ts": [11.0, 14.9, 16.0, 20.5, 10.5, 30.0],
            "response_id": ["m1", "m2", "m3", "m4", "own-1", "m6"],
            "agent_id": ["a", "a", "a", "a", None, None],
        }
    )
    joined = join_calls(calls, requests)
    assert list(joined["made_by"]) == [INSIDE, INSIDE, NONE, INSIDE, OWN, NONE]
    assert list(joined["request_id"]) == ["r1", "r1", None, "r2", "own-1", None]


def test_the_report_sets_the_tool_calls_asked_at_the_model_beside_those_the_gateway_reported():
    """A gateway that runs 3 tools a turn and says nothing of them (OpenClaw): 3 tool calls asked per kit
    request at the model, 0 in requests.csv; a turn that failed before it had an id counts in neither."""
    requests = pd.DataFrame(
        {
            "ts": [10.0, 20.0, 30.0],
            "latency_ms": [5000.0, 5000.0, 100.0],
            "agent_id": ["a", "a", "a"],
            "request_id": ["r1", "r2", None],
            "tool_calls": [0, 0, 0],
            "tokens_in": [10, 10, 0],
            "tokens_out": [1, 1, 0],
        }
    )
    asked = [1, 1, 1, 0] * 2
    calls = pd.DataFrame(
        {
            "ts": [11.0, 12.0, 13.0, 14.0, 21.0, 22.0, 23.0, 24.0],
            "response_id": [f"m{i}" for i in range(8)],
            "agent_id": ["a"] * 8,
            "tool_calls": asked,
            "tokens_in": [5] * 8,
            "tokens_out": [1] * 8,
            "cost_usd": [0.0] * 8,
        }
    )
    section = model_calls_section(RunData(path=REPO, meta={}, requests=requests, model_calls=calls))
    assert section is not None
    beside = dict(section.tables)["the model's count beside the kit's"]
    assert beside.loc["model calls per kit request that made any"].tolist()[:2] == [4.0, 1.0]
    assert beside.loc["tool calls asked per kit request that made any"].tolist()[:2] == [3.0, 0.0]
