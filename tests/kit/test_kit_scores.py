"""The scores against a gateway with a known cap (the simulator's --max-concurrent-chats 8, each stream
200 ms to its first token and 15 more tokens 20 ms apart: ~0.5 s, so it saturates near 16 requests/s):
the breaking level in the run's own unit, open and closed model; TPOT against --itl-ms; goodput equal to
the share counted by hand; and the sweep's highest rate meeting an SLO against the Erlang-B truth.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from contract import schema
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e
CAPPED = "--max-concurrent-chats 8 --ttft-ms 200 --itl-ms 20 --output-tokens 16"
SATURATION_PER_S = 16.0  # 8 streams of ~0.5 s


def summary_of(run_dir) -> dict:
    return json.loads((run_dir / schema.SUMMARY_JSON).read_text())


def chat_run(tmp_path, profile: str, *args: str, sim: str = CAPPED):
    """Chat agents on `profile` against the simulator; a run that ended as a run does (0, or 1 on
    request errors). Returns its directory and the finished process."""
    run_dir = tmp_path / "run"
    done = run_locust(run_dir, "ChatAgent", "--load-profile", profile, "--sim-args", sim, *args)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return run_dir, done


def steps(rates: list[int], hold: str) -> str:
    """--stages that jump to each rate and hold it."""
    return ",".join(f"0s:{r},{hold}:{r}" for r in rates)


@pytest.mark.timing
def test_an_open_model_breakpoint_breaks_within_15_percent_of_the_saturating_rate(tmp_path):
    run_dir, done = chat_run(
        tmp_path,
        "breakpoint",
        "--stages",
        steps([10, 12, 14, 16, 18, 20], "3s"),
        "--arrival-rate",
        "20",
        "--max-agents",
        "40",
    )
    broke = summary_of(run_dir)["breaking_level"]
    assert broke["unit"] == "arrivals/s"
    assert broke["value"] == pytest.approx(SATURATION_PER_S, rel=0.15), broke
    assert f"Yes: it broke at {broke['value']:g} arrivals/s" in done.stdout
    assert "did not break" not in done.stdout
    lateness = pd.read_csv(run_dir / schema.REQUESTS_CSV)["start_lateness_ms"].dropna()
    assert len(lateness) == sum(3 * r for r in (10, 12, 14, 16, 18, 20))  # every arrival's first request


def test_a_closed_model_breakpoint_without_abort_names_the_first_level_with_errors_above_5_percent(tmp_path):
    run_dir, done = chat_run(
        tmp_path,
        "breakpoint",
        "--step-users",
        "6",
        "--step-every",
        "3s",
        "--peak-users",
        "24",
    )
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV).sort_values("ts")
    requests = requests[requests["error_kind"] != schema.ERROR_INTERRUPTED]
    users = pd.read_csv(run_dir / schema.USERS_CSV).sort_values("ts")
    at = pd.merge_asof(requests, users[["ts", "users"]], on="ts")
    per_level = at[at["users"] > 0].groupby("users")["ok"].agg(["size", lambda ok: (ok == 0).mean()])
    per_level.columns = ["requests", "error_share"]
    broken = per_level[(per_level["requests"] >= 10) & (per_level["error_share"] > 0.05)]
    assert len(broken), f"the cap of 8 streams is never exceeded?\n{per_level}"
    first = float(broken.index[0])
    summary = summary_of(run_dir)
    assert (summary["breaking_level"]["value"], summary["breaking_level"]["unit"]) == (first, "agents")
    assert f"Yes: it broke at {first:g} agents" in done.stdout and "did not break" not in done.stdout


@pytest.mark.timing
def test_tpot_reads_the_itl_knob_and_goodput_is_the_share_counted_by_hand(tmp_path):
    run_dir, done = chat_run(
        tmp_path,
        "smoke",
        "--peak-users",
        "4",
        "--duration",
        "6s",
        "--slo",
        "ttft_ms <= 205",
        "--slo",
        "tpot_ms p90 <= 20.3",
        "--threshold",
        "goodput >= 0",
        # seed 2 fails the simulator's 3rd and 4th chats (its one seeded draw per chat, in arrival order):
        # the SLOs split the requests by a knob, not by the host's timing (seed 0 first fails the 36th)
        sim="--ttft-ms 200 --itl-ms 20 --output-tokens 16 --error-rate 0.1 --seed 2",
    )
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    requests = requests[requests["error_kind"] != schema.ERROR_INTERRUPTED]
    ok = requests["ok"] == 1
    tpot = (requests["latency_ms"] - requests["ttft_ms"]) / (requests["tokens_out"] - 1)
    assert tpot[ok].median() == pytest.approx(20.0, abs=1.0)
    met = ok & (requests["ttft_ms"] <= 205) & (tpot <= 20.3)
    assert 0 < met.sum() < len(requests)  # the SLOs split the requests, failures count as misses
    summary = summary_of(run_dir)["goodput"]
    assert (summary["requests"]["scored"], summary["requests"]["met"]) == (len(requests), int(met.sum()))
    assert summary["share"] == met.sum() / len(requests)
    live = json.loads((run_dir / schema.RUN_JSON).read_text())["thresholds"][0]
    assert (live["value"], live["samples"]) == (summary["share"], len(requests))  # the live judge agrees
    assert "goodput: " in done.stdout and "TPOT: p50 " in done.stdout


@pytest.mark.timing
def test_tpot_reads_the_itl_knob_when_the_usage_counts_tokens_the_client_never_received(tmp_path):
    """A gateway whose usage counts 48 output tokens it never streams (the simulator's reasoning tokens,
    as Hermes and OpenClaw sum their inner calls' tool-call tokens): TPOT is still the pace of the 16
    content tokens received, 20 ms apart; divided by the usage's 64 it would read 4.8 ms."""
    run_dir, done = chat_run(
        tmp_path,
        "smoke",
        "--peak-users",
        "4",
        "--duration",
        "5s",
        sim="--ttft-ms 200 --itl-ms 20 --output-tokens 16 --reasoning-tokens 48",
    )
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    ok = requests[(requests["ok"] == 1) & (requests["error_kind"] != schema.ERROR_INTERRUPTED)]
    assert len(ok) >= 8 and (ok["tokens_out"] == 64).all() and (ok["content_tokens"] == 16).all(), ok
    tpot = summary_of(run_dir)["latency"]["tpot"]
    assert tpot["p50"] == pytest.approx(20.0, abs=1.0) and tpot["n"] == len(ok), tpot
    assert "TPOT: p50 2" in done.stdout, done.stdout[-1500:]


def erlang_b(servers: int, load: float) -> float:
    """The share of Poisson arrivals a loss system of `servers` refuses at `load` erlangs."""
    blocked = 1.0
    for n in range(1, servers + 1):
        blocked = load * blocked / (n + load * blocked)
    return blocked


@pytest.mark.timing
def test_a_sweep_finds_the_highest_rate_meeting_a_ttft_slo_within_one_step_of_the_truth(tmp_path):
    """Poisson arrivals at a cap of 8 streams: a refused request misses the SLO, so a rate meets
    `ttft_ms p95 <= 400` while the Erlang-B loss at it (load = rate x the measured stream time) is <= 5 %."""
    run_dir, done = chat_run(
        tmp_path,
        "sweep",
        "--sweep-rates",
        "4",
        "--hold",
        "5s",
        "--max-agents",
        "40",
        "--arrivals",
        "poisson",
        "--slo",
        "ttft_ms p95 <= 400",
    )
    passes = json.loads((run_dir / schema.RUN_JSON).read_text())["sweep"]
    rates = [p["rate"] for p in passes if p["kind"] == "rate"]
    assert passes[1]["measured_rate"] == pytest.approx(SATURATION_PER_S, rel=0.15)
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    stream_s = requests.loc[requests["ok"] == 1, "latency_ms"].median() / 1000
    meets = [r for r in rates if erlang_b(8, r * stream_s) <= 0.05]
    truth = rates.index(max(meets)) if meets else -1
    found = summary_of(run_dir)["sweep"]["highest_rate_meeting_slos"]
    step = rates.index(found) if found is not None else -1
    assert abs(step - truth) <= 1, (found, rates, [round(erlang_b(8, r * stream_s), 3) for r in rates])
    assert "highest delivered rate that met every SLO" in done.stdout


def test_a_sweep_whose_verdict_says_no_rate_broke_exits_0_despite_its_errors(tmp_path):
    """1 % of the simulator's answers fail (errors <= 5 % at every rate: nothing broke): the sweep's
    errors are what its verdict judges, so the run exits 0 (it exited 1, Locust's any-error rule)."""
    run_dir = tmp_path / "run"
    # 150 ms streams: 16 agents top out near 100/s, a rate a loaded host delivers (at 30 ms streams the
    # sweep's top rate, 170/s, once went undelivered on a loaded host: exit 7)
    sim = "--ttft-ms 100 --itl-ms 10 --output-tokens 5 --error-rate 0.01 --seed 3"
    sweep = ("--load-profile", "sweep", "--sweep-rates", "2", "--hold", "4s", "--max-agents", "16")
    done = run_locust(run_dir, "ChatAgent", *sweep, "--sim-args", sim)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no delivered rate broke" in summary_of(run_dir)["headline"]["verdict"]
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    assert (requests["ok"] == 0).sum() > 0  # the errors were there
