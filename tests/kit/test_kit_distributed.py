"""Distributed Locust (--master / --worker / --processes) with the kit: the saturation check judges every
load-generator process from the workers' own CPU reports; the open model and rounds are paced across
workers; serial drivers are refused in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from analysis.validity import LOADGEN_CPU_PCT
from contract.exit_codes import BAD_INPUT, LOAD_NOT_DELIVERED, OK
from kit.judge import LiveJudge
from lifecycle.target import free_port
from tests.locust_runs import LOCUST, REPO, locust_command, run_locust
from tests.netns import lan
from tests.sampler.support import Children

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def processes(n: int) -> tuple[str, ...]:
    """--processes N on a port of its own: a worker must never join another test's master."""
    port = str(free_port())
    return ("--processes", str(n), "--master-bind-port", port, "--master-port", port)


def distributed_smoke(run_dir, sim_args: str, *extra: str):
    """Four chat agents for 12 s on master + 2 workers; a generous deadline (three processes start,
    the workers drain, on a shared machine)."""
    profile = ("ChatAgent", "--load-profile", "smoke", "--peak-users", "4", "--duration", "12s")
    return run_locust(run_dir, *profile, "--sim-args", sim_args, *extra, *processes(2), timeout=300)


def skip_if_workers_were_lost(done) -> None:
    """Locust itself drops a worker whose heartbeats stall 3 s; on a heavily shared machine that happens
    right after spawn (seen with the main branch too): the run then ends with exit code 7, and
    what these tests check is not under test (tests/kit/test_kit_worker_losses.py checks that ending)."""
    if "failed to send heartbeat" in done.stderr or "went missing, stopping test" in done.stderr:
        pytest.skip("Locust lost a worker (heartbeat timeout) on this loaded machine")


def late_only(code: int, stop_reason: str) -> bool:
    """A run the kit judged not delivered only because over 5 % of its arrivals started over 100 ms late:
    what a starved CPU does to three Locust processes on a shared machine (seen on CI), which
    the kit rightly says; every arrival was still issued, none dropped, which the test goes on to check."""
    late = re.fullmatch(r"load not delivered: at [\d.]+ arrivals/s: [\d.]+ % late \([\d,]+\)", stop_reason)
    return code == LOAD_NOT_DELIVERED and late is not None


def test_a_worker_with_too_few_cpu_reports_is_not_judged(tmp_path):
    judge = LiveJudge([], 0.0, tmp_path / "samples.csv", lambda now: 0)
    for cpu in (95.0, 96.0, 97.0):
        judge.observe_worker_cpu("worker a", cpu)
    for cpu in (99.0, 99.0):
        judge.observe_worker_cpu("worker b", cpu)
    judged = judge.workers_cpu_p90()
    assert set(judged) == {"worker a"}  # b: two reports are too few to judge
    assert judged["worker a"] > LOADGEN_CPU_PCT


@pytest.mark.e2e
@pytest.mark.parametrize(("profile", "why"), [("capacity", "serial driver"), ("sweep", "its own rates")])
def test_one_process_profiles_are_refused_on_a_master_in_one_line(tmp_path, profile, why):
    done = run_locust(
        tmp_path / "run",
        "--master",
        "--master-bind-port",
        str(free_port()),
        "--expect-workers",
        "1",
        "--load-profile",
        profile,
        timeout=60,
    )
    assert done.returncode == BAD_INPUT
    errors = [line for line in done.stderr.splitlines() if line.startswith("loadkit: error:")]
    assert len(errors) == 1 and why in errors[0] and "Traceback" not in done.stderr


@pytest.mark.e2e
def test_every_worker_reports_its_cpu_to_the_masters_saturation_check(tmp_path):
    run_dir = tmp_path / "run"
    done = distributed_smoke(run_dir, "--ttft-ms 20")
    skip_if_workers_were_lost(done)
    meta = json.loads((run_dir / "run.json").read_text())
    validity = meta["validity"]
    workers = [name for name in validity.get("processes", {}) if name.startswith("worker ")]
    assert len(workers) == 2, (validity, done.stderr[-1500:])
    worst = max(validity["processes"].values())
    assert validity["loadgen_cpu_p90"] == worst and validity["valid"] is (worst <= LOADGEN_CPU_PCT)
    # each worker named by Locust's index and the pid its agents' rows carry (agent ids start with it)
    pids = set(pd.read_csv(run_dir / "requests.csv")["agent_id"].str.split("-").str[0])
    named = {name.split(" (pid ")[0]: name.split(" (pid ")[1].rstrip(")") for name in workers}
    assert set(named) == {"worker 0", "worker 1"} and set(named.values()) == pids, (workers, pids)
    measured = "load generator measured: 2 processes"
    ending = [line for line in done.stdout.splitlines() if line.startswith(measured)]
    assert len(ending) == 1 and all(f"pid {p}: " in ending[0] for p in pids), done.stdout[-1500:]


@pytest.mark.e2e
def test_open_model_on_two_workers_issues_the_profiles_arrivals_and_rows_match_locust(tmp_path):
    run_dir = tmp_path / "run"
    rate = ("--arrival-rate", "10", "--max-agents", "8")
    done = distributed_smoke(run_dir, "--ttft-ms 20 --itl-ms 1 --output-tokens 4", *rate)
    skip_if_workers_were_lost(done)
    meta = json.loads((run_dir / "run.json").read_text())
    assert done.returncode == OK or late_only(done.returncode, meta["stop_reason"]), done.stderr[-1500:]
    expected = meta["profile"]["params"]["expected_arrivals"]
    arrivals = meta["open_model"]
    assert arrivals["issued_arrivals"] == pytest.approx(expected, rel=0.05)
    assert arrivals["dropped_arrivals"] == 0
    rows = pd.read_csv(run_dir / "requests.csv")
    stats = pd.read_csv(run_dir / "locust_stats.csv")
    assert len(rows) == int(stats.loc[stats["Name"] == "Aggregated", "Request Count"].iloc[0])
    assert rows["agent_id"].str.split("-").str[0].nunique() == 2  # both workers served arrivals
    # each worker takes every other arrival of one schedule: together 10/s evenly spaced (two workers
    # pacing 5/s each from the same start would send pairs at once, 0.2 s apart)
    due = (rows["ts"] - rows["start_lateness_ms"] / 1000).dropna().sort_values()
    gaps = due.diff().dropna()
    assert gaps.median() == pytest.approx(0.1, abs=0.01) and (gaps < 0.05).mean() < 0.05


ROUNDS = (
    "TaskAgent",
    "--load-profile",
    "rounds",
    "--rounds",
    "2,3",
    "--baseline",
    "1s",
    "--poll-interval",
    "0.2",
)
ROUNDS_RUN_ID = "dist-rounds"
BOARD_QUERY = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())"


def board_of(gateway: str, run_id: str = ROUNDS_RUN_ID, run=lambda argv: argv) -> list[dict]:
    """The task board's own list of the run's tasks (`run` wraps the query into a namespace)."""
    query = [sys.executable, "-c", BOARD_QUERY, f"{gateway}/v1/tasks?tag=loadkit:{run_id}"]
    out = subprocess.run(run(query), capture_output=True, text=True, timeout=30, check=True).stdout
    return json.loads(out)["data"]


def assert_rounds_counted(run_dir, board: list[dict]) -> None:
    """Rounds 2,3: run.json counts every task the board received, round 2 starts only after round 1's
    tasks are done, both workers ran round 2, request rows equal Locust's totals."""
    got = json.loads((run_dir / "run.json").read_text())["profile"]["rounds"]
    assert [(r["round"], r["submitted"], r["finished"], r["end_reason"]) for r in got] == [
        (1, 2, 2, "tasks finished"),
        (2, 3, 3, "tasks finished"),
    ]
    assert len(board) == 5 and {t["status"] for t in board} == {"done"}
    tasks = pd.read_csv(run_dir / "tasks.csv")
    assert tasks.groupby("round").size().to_dict() == {1: 2, 2: 3}
    assert set(tasks["task_id"]) == {t["id"] for t in board}
    second = tasks[tasks["round"] == 2]
    assert (second["submitted_ts"] >= got[0]["end_ts"] - 0.05).all()  # paced: after round 1 ended
    assert second["agent_id"].str.split("-").str[0].nunique() == 2  # both workers ran round 2
    rows = pd.read_csv(run_dir / "requests.csv")
    stats = pd.read_csv(run_dir / "locust_stats.csv")
    assert len(rows) == int(stats.loc[stats["Name"] == "Aggregated", "Request Count"].iloc[0])


@pytest.mark.e2e
def test_rounds_on_two_workers_count_every_task_and_pace_rounds_fleet_wide(procs, tmp_path):
    """Rounds on master + 2 workers (`--processes 2`) against a task board started here."""
    port = free_port()
    sim = [sys.executable, "-m", "simgateway", "--port", str(port), "--task-seconds", "1"]
    gateway = procs.start(sim, env=ENV, stdout=subprocess.PIPE, text=True)
    assert "listening" in gateway.stdout.readline()
    run_dir, url = tmp_path / "run", f"http://127.0.0.1:{port}"
    target = ("--host", url, "--run-id", ROUNDS_RUN_ID, "--no-cleanup")
    done = run_locust(run_dir, *ROUNDS, *target, *processes(2), timeout=300)
    skip_if_workers_were_lost(done)
    assert done.returncode == OK, done.stderr[-1500:]
    assert_rounds_counted(run_dir, board_of(url))


@pytest.fixture
def three_hosts():
    with lan("gw", "lg", "wk") as named:
        yield named


@pytest.fixture
def procs():
    """Processes of a test that needs no namespaces, all stopped at teardown."""
    kids = Children()
    yield kids
    kids.stop_all()


@pytest.fixture
def ns_procs(three_hosts):
    """Processes of the test, stopped before the namespaces go (fixture order: procs first)."""
    kids = Children()
    yield kids
    kids.stop_all()


def gateway_in(host, ns_procs, *knobs: str) -> str:
    """The simulator in `host`'s namespace, on its private address; returns its URL."""
    sim = [sys.executable, "-m", "simgateway", "--port", "18080", "--bind", host.address, *knobs]
    gateway = ns_procs.start(host.command(sim), env=ENV, stdout=subprocess.PIPE, text=True)
    assert "listening" in gateway.stdout.readline()
    return f"http://{host.address}:18080"


def run_fleet(hosts, ns_procs, master: list[str], tmp_path, workers: int = 2) -> None:
    """`master` in the load generator's namespace with `workers` workers in theirs, until it exits 0."""
    lg, wk = hosts["lg"], hosts["wk"]
    master = [*master, "--master", "--master-bind-host", lg.address, "--expect-workers", str(workers)]
    log = open(tmp_path / "master.log", "w")  # closed with the process
    kit = ns_procs.start(lg.command(master), cwd=REPO, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    worker = [*LOCUST[:-1], "--worker", "--master-host", lg.address]  # LOCUST ends with --headless
    for _ in range(workers):
        ns_procs.start(
            wk.command(worker), cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    assert kit.wait(300) == OK, (tmp_path / "master.log").read_text()[-2000:]


@pytest.mark.e2e
def test_master_and_two_workers_in_other_namespaces_keep_the_open_model(three_hosts, ns_procs, tmp_path):
    """Gateway in one namespace, master in another, two workers in a third: arrivals within 5 %, none
    dropped, and the master's request rows equal Locust's totals."""
    url = gateway_in(three_hosts["gw"], ns_procs, "--ttft-ms", "20")
    run_dir = tmp_path / "run"
    master = locust_command(run_dir, "ChatAgent", "--host", url, "--load-profile", "smoke")
    master += ["--peak-users", "4", "--duration", "12s", "--arrival-rate", "10", "--max-agents", "8"]
    run_fleet(three_hosts, ns_procs, master, tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    arrivals = meta["open_model"]
    assert arrivals["issued_arrivals"] == pytest.approx(
        meta["profile"]["params"]["expected_arrivals"], rel=0.05
    )
    assert arrivals["dropped_arrivals"] == 0
    rows = pd.read_csv(run_dir / "requests.csv")
    stats = pd.read_csv(run_dir / "locust_stats.csv")
    assert len(rows) == int(stats.loc[stats["Name"] == "Aggregated", "Request Count"].iloc[0])
    assert len([p for p in meta["validity"]["processes"] if p.startswith("worker ")]) == 2


@pytest.mark.e2e
def test_rounds_with_master_and_two_workers_in_other_namespaces(three_hosts, ns_procs, tmp_path):
    """The same rounds with the task board, the master and the two workers in three namespaces."""
    gw = three_hosts["gw"]
    url = gateway_in(gw, ns_procs, "--task-seconds", "1")
    run_dir = tmp_path / "run"
    master = locust_command(run_dir, *ROUNDS, "--host", url, "--run-id", ROUNDS_RUN_ID, "--no-cleanup")
    run_fleet(three_hosts, ns_procs, master, tmp_path)
    assert_rounds_counted(run_dir, board_of(url, run=gw.command))
