"""Two sampler services (two "gateway hosts", on 127.0.0.1) in one run: every row keeps its host, the
report's resource table has a column per host and never mixes them, each host's peak target memory
reads back its own target's, and the verdicts read the first service's host."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from analysis.hosts import judged_host, judged_samples
from analysis.load import load_run
from analysis.resources import resource_table
from contract.exit_codes import OK
from contract.schema import MIB
from lifecycle.target import free_port
from tests.locust_runs import run_locust
from tests.sampler.support import ALLOCATOR, REPO, Children, read_rows, tell

pytestmark = pytest.mark.e2e

TOKEN = "two-hosts-token-0123456789"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "LOADKIT_SAMPLER_TOKEN": TOKEN}
HOSTS = {"gw-a": 40, "gw-b": 160}  # label: MiB its target allocates


@pytest.fixture
def procs():
    kids = Children()
    yield kids
    kids.stop_all()


def start_host(procs: Children, label: str, mib: int) -> tuple[int, str]:
    """A target holding `mib` MiB it touched, and a sampler service labelled `label` watching it."""
    target = procs.start([sys.executable, "-c", ALLOCATOR, str(mib)])
    assert target.stdout.readline().strip() == b"ready" and tell(target) == "done"
    port = free_port()
    argv = [sys.executable, "-m", "sampler", "serve", "--port", str(port), "--pid", str(target.pid)]
    service = procs.start(
        [*argv, "--interval", "0.25", "--host-label", label], env=ENV, stderr=subprocess.PIPE
    )
    assert b"listening" in service.stderr.readline()
    return target.pid, f"http://127.0.0.1:{port}"


def test_two_sampler_hosts_get_a_column_each_and_their_own_peak_memory(procs, tmp_path, monkeypatch):
    started = {label: start_host(procs, label, mib) for label, mib in HOSTS.items()}
    sim_port = free_port()
    sim = procs.start(
        [sys.executable, "-m", "simgateway", "--port", str(sim_port)], env=ENV, stdout=subprocess.PIPE
    )
    assert b"listening" in sim.stdout.readline()
    urls = [arg for _, url in started.values() for arg in ("--sampler-url", url)]
    monkeypatch.setenv("LOADKIT_SAMPLER_TOKEN", TOKEN)  # run_locust passes this process's environment
    run_dir = tmp_path / "run"
    profile = ("ChatAgent", "--load-profile", "smoke", "--peak-users", "2", "--duration", "6s")
    done = run_locust(run_dir, *profile, "--host", f"http://127.0.0.1:{sim_port}", *urls, timeout=120)
    assert done.returncode == OK, done.stderr[-1500:]
    truth = {label: psutil.Process(pid).memory_info().rss / MIB for label, (pid, _) in started.items()}

    assert {"gw-a", "gw-b"} <= {r["host"] for r in read_rows(run_dir / "samples.csv")}
    run = load_run(run_dir)
    table = resource_table(run)
    assert {"gw-a", "gw-b"} <= set(table.columns) and "value" not in table.columns
    peak = table.loc["peak target RSS (MiB)"]
    for label, rss_mib in truth.items():  # a settled allocation: within 2 MiB of the OS's own figure
        assert peak[label] == pytest.approx(rss_mib, abs=2.0)
    local = [h for h in table.columns if h not in HOSTS]
    assert local and peak[local].isna().all()  # the load generator's rows hold no target memory
    assert judged_host(run) == "gw-a" and set(judged_samples(run)["host"]) == {"gw-a"}
    report = (run_dir / "report.md").read_text()
    assert "one column per host" in report and "the soak verdict and the rounds table read gw-a" in report
