"""A shared host: two simulated gateways that one `--target-match` regex matches (one of them "someone
else's", working in another directory), and a regex that matches the kit's own command line. Real
`locust -f locustfile.py --headless` runs: the ambiguous pattern is refused at start naming both trees;
scoped with --target-cwd, the target's peak RSS is the chosen tree's as psutil reads it, and none of the
kit's processes (its master, its forked workers, the sampler) is counted.
"""

from __future__ import annotations

import uuid

import pandas as pd
import psutil
import pytest

from contract import exit_codes, schema
from simgateway import launch
from tests.fault_runs import KitProcess, alive
from tests.locust_runs import run_locust

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
# In these gateways' command lines (their model's name) and the kit's own (--target-match MARKER); not in
# any other simulator on a host shared with other test runs
MARKER = f"model-shared-host-{uuid.uuid4().hex[:8]}"
RSS_TOLERANCE = 0.02
HOME_VARIABLE = "SHARED_HOST_HOME"  # as HERMES_HOME tells two Hermes apart


@pytest.fixture
def two_gateways(tmp_path, monkeypatch):
    """Ours (working in tmp/ours, its environment SHARED_HOST_HOME=ours) and someone else's (tmp/theirs,
    SHARED_HOST_HOME=theirs), both `python -m simgateway`."""
    started = []
    for name in ("ours", "theirs"):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(HOME_VARIABLE, name)
        started.append(launch.start(["--model", MARKER], cwd=str(tmp_path / name)))
    monkeypatch.delenv(HOME_VARIABLE)
    yield started
    for gateway in started:
        gateway.stop()


def tree_rss(pid: int) -> int:
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])


def smoke(url: str, *extra: str) -> tuple[str, ...]:
    return (
        *("ChatAgent", "--load-profile", "smoke", "--peak-users", "2", "--duration", "3s"),
        *("--host", url, "--sample-interval", "0.2", "--target-match", MARKER, *extra),
    )


def test_a_pattern_matching_two_unrelated_gateways_is_refused_naming_both(tmp_path, two_gateways):
    ours, theirs = two_gateways
    run_dir = tmp_path / "run"
    done = run_locust(run_dir, *smoke(ours.url))
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, done.stderr[-2000:]
    for gateway, name in ((ours, "ours"), (theirs, "theirs")):
        assert f"pid {gateway.pid} " in errors[0] and str(tmp_path / name) in errors[0]
    assert "--target-cwd" in errors[0] and "--target-match-all" in errors[0]
    assert not run_dir.exists() or not any(run_dir.iterdir())


@pytest.mark.parametrize("scope", ["--target-cwd", "--target-env"])
def test_scoped_to_one_tree_the_peak_is_that_trees_rss_and_no_kit_process_is_counted(
    tmp_path, two_gateways, scope
):
    ours, theirs = two_gateways
    value = str(tmp_path / "ours") if scope == "--target-cwd" else f"{HOME_VARIABLE}=ours"
    kit = KitProcess.start(tmp_path / "run", *smoke(ours.url, scope, value))
    try:
        code = kit.wait(120)
    finally:
        kit.kill()
    assert code == exit_codes.OK, kit.stderr[-2000:]
    truth = tree_rss(ours.pid)  # the simulator idles after the run: its RSS as the run last read it
    samples = pd.read_csv(kit.run_dir / schema.SAMPLES_CSV)
    peak = samples[schema.SAMPLE.target_rss_bytes].max()
    assert abs(peak - truth) <= RSS_TOLERANCE * truth, (peak, truth)
    counted = pd.read_csv(kit.run_dir / schema.PROCESSES_CSV)
    assert set(counted.pid) == {ours.pid}, counted.to_string()
    assert counted.why.str.contains(f"tree of pid {ours.pid}").all()
    kit_pids = {kit.proc.pid, kit.meta()["sampler"]["pid"]}
    assert not kit_pids & set(counted.pid)
    others = {
        o["pid"] for o in kit.meta()["host_others"]
    }  # the busiest others: neither the kit nor the target
    assert len(others) <= 3 and not others & (kit_pids | {ours.pid})
    assert alive(theirs.pid)


def test_the_kits_forked_workers_are_never_the_target(tmp_path):
    """--processes 2: the workers are forks of the master carrying its command line (and the pattern),
    working in the same directory as the gateway (the repository): only the kit's tree tells them apart."""
    with launch.running(["--model", MARKER]) as gateway:
        done = run_locust(tmp_path / "run", *smoke(gateway.url, "--processes", "2"), timeout=180)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    counted = pd.read_csv(tmp_path / "run" / schema.PROCESSES_CSV)
    assert set(counted.pid) == {gateway.pid}, counted.to_string()
