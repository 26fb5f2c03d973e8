"""The sampler's readings against real processes with a known truth: memory allocated, CPU burnt,
grandchildren forked, a worker detached from its tree, a process put in a cgroup of its own."""

from __future__ import annotations

import os
import signal
import statistics
import uuid
from pathlib import Path

import numpy
import pytest

from sampler import cgroupfs
from sampler.selection import PatternSelector
from sampler.targets import CgroupTarget, PatternTarget, ProcessTreeTarget
from tests.sampler.support import (
    ALLOCATOR,
    BUSY,
    SLEEPER,
    Children,
    read_rows,
    tell,
    wait_for,
    wait_rows,
)

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
V1_MEMORY = Path("/sys/fs/cgroup/memory")


@pytest.fixture
def children():
    kids = Children()
    yield kids
    kids.stop_all()


def test_cli_reads_back_200_mib_allocation_within_5_percent(children, tmp_path):
    child = children.python(ALLOCATOR, "200")
    assert child.stdout.readline().strip() == b"ready"
    out = tmp_path / "samples.csv"
    children.sampler("--out", str(out), "--pid", str(child.pid), "--interval", "0.1")
    before = wait_rows(out, 3)
    assert tell(child) == "done"
    n = len(read_rows(out))
    after = wait_rows(out, n + 3)[n:]
    delta = statistics.median(int(r["target_rss_bytes"]) for r in after) - statistics.median(
        int(r["target_rss_bytes"]) for r in before
    )
    assert delta == pytest.approx(200 * MIB, rel=0.05)


def test_in_process_median_rss_reads_back_allocation_within_5_percent(children):
    child = children.python(ALLOCATOR, "100")
    assert child.stdout.readline().strip() == b"ready"
    target = ProcessTreeTarget(child.pid)
    before = target.median_rss(n=3)
    assert tell(child) == "done"
    assert target.median_rss(n=3) - before == pytest.approx(100 * MIB, rel=0.05)
    target.close()


def _sampled_and_true_cpu_pct(children, tmp_path, code: str, refresh_s: str) -> tuple[float, float]:
    """Run a child that reports `wall cpu_seconds` lines of its own (own + reaped children) while the
    sampler reads it every 0.25 s; return (sampler's CPU %, child's own CPU %) over the same span.
    The machine is shared: a busy loop gets a whole core only when nobody else wants it, so the truth
    is what the child itself consumed, not a nominal 100."""
    child = children.python(code)
    out = tmp_path / "samples.csv"
    children.sampler(
        "--out", str(out), "--pid", str(child.pid), "--interval", "0.25", "--tree-refresh-s", refresh_s
    )
    rows = wait_rows(out, 11)
    child.kill()
    reports = [
        tuple(map(float, line.split())) for line in child.communicate(timeout=10)[0].decode().splitlines()
    ]
    ts = [float(r["ts"]) for r in rows]
    sampled = sum(float(r["target_cpu_pct"]) * (b - a) for r, a, b in zip(rows[1:], ts, ts[1:], strict=False))
    walls, cpus = [w for w, _ in reports], [c for _, c in reports]
    true_cpu = numpy.interp(ts[-1], walls, cpus) - numpy.interp(ts[0], walls, cpus)
    return sampled / (ts[-1] - ts[0]), true_cpu / (ts[-1] - ts[0]) * 100


def test_busy_loop_child_cpu_read_back_within_10_points(children, tmp_path):
    sampled, truth = _sampled_and_true_cpu_pct(children, tmp_path, BUSY, "2.0")
    assert truth > 10  # it did run
    assert sampled == pytest.approx(truth, abs=10)


FORKER = """
import os, time
end = time.time() + 60
while time.time() < end:
    pid = os.fork()
    if pid == 0:
        stop = time.time() + 0.15
        while time.time() < stop:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    t = os.times()
    print(time.time(), t.user + t.system + t.children_user + t.children_system, flush=True)
"""


@pytest.mark.parametrize("refresh_s", ["0.05", "30"], ids=["grandchildren-seen", "grandchildren-unseen"])
def test_short_lived_busy_grandchildren_are_counted_once(children, tmp_path, refresh_s):
    """Parent idles in waitpid while a chain of 150 ms busy children runs: their CPU is read back whether
    the sampler saw the children (refresh every read) or never did (counted via the parent's reaped time)."""
    sampled, truth = _sampled_and_true_cpu_pct(children, tmp_path, FORKER, refresh_s)
    assert truth > 10  # the grandchildren did run
    assert sampled == pytest.approx(truth, abs=10)


DETACHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", os.environ["MARKER"]])
    os._exit(0)
os.waitpid(pid, 0)
print("ready", flush=True)
sys.stdin.readline()
"""


def _detached_worker(children: Children) -> tuple[int, str, int]:
    """(launcher pid, marker, pid of its double-forked, setsid worker carrying the marker in its argv)."""
    marker = f"h2-detached-{uuid.uuid4().hex}"
    launcher = children.python(DETACHER, env={**os.environ, "MARKER": marker})  # not in its own argv
    assert launcher.stdout.readline().strip() == b"ready"
    worker = wait_for(PatternSelector(marker).pids, what="the detached worker").pop()
    return launcher.pid, marker, worker


def test_pattern_finds_double_forked_worker_that_is_not_in_the_tree(children):
    launcher, marker, worker = _detached_worker(children)
    try:
        assert worker not in ProcessTreeTarget(launcher).pids
        target = PatternTarget(marker)
        assert target.pids == {worker}
        assert target.read().rss_bytes > 0
    finally:
        os.kill(worker, signal.SIGKILL)


def test_cli_pattern_never_matches_the_sampler_itself(children, tmp_path):
    launcher, marker, worker = _detached_worker(children)
    out = tmp_path / "samples.csv"
    try:
        children.sampler("--out", str(out), "--match", marker, "--interval", "0.1")
        rows = wait_rows(out, 3)
        assert {r["target_procs"] for r in rows} == {"1"}
    finally:
        os.kill(worker, signal.SIGKILL)


@pytest.fixture
def v1_cgroup():
    if os.geteuid() != 0 or not (V1_MEMORY / "memory.usage_in_bytes").exists():
        pytest.skip("needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")
    path = V1_MEMORY / f"h2test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    yield path
    wait_for(lambda: not cgroupfs.read_procs(path), what="the cgroup to empty")
    path.rmdir()


def test_cgroup_v1_target_reports_its_processes_and_memory(children, v1_cgroup, tmp_path):
    child = children.python(ALLOCATOR, "64")
    assert child.stdout.readline().strip() == b"ready"
    (v1_cgroup / "cgroup.procs").write_text(str(child.pid))
    assert tell(child) == "done"  # allocated after joining: charged to the cgroup
    target = CgroupTarget(str(v1_cgroup))
    assert target.pids == {child.pid}
    assert target.read().rss_bytes >= 64 * MIB
    out = tmp_path / "samples.csv"
    children.sampler("--out", str(out), "--cgroup", str(v1_cgroup), "--interval", "0.1")
    row = wait_rows(out, 2)[-1]
    assert int(row["cgroup_memory_bytes"]) >= 64 * MIB
    assert int(row["cgroup_peak_bytes"]) >= int(row["cgroup_memory_bytes"]) * 0.99
    assert int(row["cgroup_anon_bytes"]) >= 64 * MIB * 0.95
    assert row["target_procs"] == "1"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(5)


def test_sidecar_is_measured_apart_and_not_counted_in_the_target(children, tmp_path):
    parent = children.python(SLEEPER)
    assert parent.stdout.readline().strip() == b"ready"
    sidecar = children.python(ALLOCATOR, "50")
    assert sidecar.stdout.readline().strip() == b"ready" and tell(sidecar) == "done"
    out = tmp_path / "samples.csv"
    children.sampler("--out", str(out), "--pid", str(parent.pid), "--sidecar-pid", str(sidecar.pid))
    row = wait_rows(out, 2)[-1]
    assert int(row["sidecar_rss_bytes"]) >= 50 * MIB
    assert int(row["target_rss_bytes"]) < 50 * MIB and row["target_procs"] == "1"
