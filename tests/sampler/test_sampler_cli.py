"""`python -m sampler` as a process: how it ends (target died, load generator gone, signal), what it
writes (every row intact, the schema's header), and how it takes bad input and a garbage queue endpoint."""

from __future__ import annotations

import json
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from contract.schema import SAMPLE_COLUMNS
from sampler.launch import start_sampler, stop_sampler
from sampler.options import SamplerOptions
from tests.sampler.support import SLEEPER, Children, read_rows, wait_for, wait_rows

pytestmark = pytest.mark.e2e


@pytest.fixture
def children():
    kids = Children()
    yield kids
    kids.stop_all()


@pytest.fixture
def sleeper(children):
    child = children.python(SLEEPER)
    assert child.stdout.readline().strip() == b"ready"
    return child


def test_target_death_writes_a_last_row_and_keeps_every_earlier_row(children, sleeper, tmp_path):
    out = tmp_path / "samples.csv"
    sampler = children.sampler("--out", str(out), "--pid", str(sleeper.pid), "--interval", "0.1")
    before = wait_rows(out, 5)
    sleeper.kill()
    sleeper.wait(5)
    assert sampler.wait(10) == 0
    rows = read_rows(out)
    assert rows[: len(before)] == before
    assert rows[-1]["target_alive"] == "0" and rows[-1]["event"] == "target_exited"
    assert all(r["target_alive"] == "1" and r["event"] == "" for r in rows[:-1])
    frame = pd.read_csv(out)
    assert tuple(frame.columns) == SAMPLE_COLUMNS and len(frame) == len(rows)
    assert frame["ts"].is_monotonic_increasing


@pytest.mark.parametrize("transient", [True, False])
def test_a_transient_target_with_none_left_between_sessions_has_not_exited(children, tmp_path, transient):
    """The agents' stdio servers end with their sessions: a gap with none running is not an exit (the
    run would end with exit 3), and a server started after it is read. The control: a --match target
    without --transient-target has exited when its last process goes."""
    marker = f"transient-{tmp_path.name}"
    first = children.python(SLEEPER, marker)
    assert first.stdout.readline().strip() == b"ready"
    out = tmp_path / "samples.csv"
    flags = ["--transient-target"] if transient else []
    sampler = children.sampler("--out", str(out), "--match", marker, "--tree-refresh-s", "0.1", *flags)
    wait_rows(out, 3)
    first.kill()
    first.wait(5)
    if not transient:
        assert sampler.wait(10) == 0 and read_rows(out)[-1]["event"] == "target_exited"
        return
    seen = len(wait_for(lambda: [r for r in read_rows(out) if r["target_procs"] == "0"][2:], what="a gap"))
    assert seen and sampler.poll() is None
    second = children.python(SLEEPER, marker)
    assert second.stdout.readline().strip() == b"ready"
    wait_for(lambda: read_rows(out)[-1]["target_procs"] == "1", what="the next server read")
    assert sampler.poll() is None and all(r["event"] == "" for r in read_rows(out))


class _Gateway(BaseHTTPRequestHandler):
    body = b"<html>garbage</html>"

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(type(self).body)

    def log_message(self, *args):
        pass


@pytest.fixture
def gateway():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()
    _Gateway.body = b"<html>garbage</html>"


def test_garbage_queue_endpoint_gives_empty_cells_and_an_event_and_sampling_goes_on(
    children, sleeper, gateway, tmp_path
):
    out = tmp_path / "samples.csv"
    fields = ["--queue-field", "queue.n_pending", "--inflight-field", "queue.n_running"]
    sampler = children.sampler("--out", str(out), "--pid", str(sleeper.pid), "--queue-url", gateway, *fields)
    bad = wait_rows(out, 4)
    assert all(r["queue_length"] == "" and r["event"].startswith("queue_probe_error: ") for r in bad)
    _Gateway.body = json.dumps({"queue": {"n_pending": 2, "n_running": 6}}).encode()
    good = wait_for(lambda: [r for r in read_rows(out) if r["queue_length"]], what="a good queue reading")
    assert (good[0]["queue_length"], good[0]["in_progress"], good[0]["event"]) == ("2", "6", "")
    assert stop_sampler(sampler) == 0
    logged = [line for line in sampler.stderr.read().splitlines() if "queue probe" in line]
    # each error once (its first occurrence), not one line per reading; a busy host may add a timeout's
    assert logged and len(set(logged)) == len(logged), logged


def test_sampler_exits_after_a_last_row_when_the_load_generator_is_gone(children, sleeper, tmp_path):
    loadgen = children.python(SLEEPER)
    assert loadgen.stdout.readline().strip() == b"ready"
    out = tmp_path / "samples.csv"
    target = ["--pid", str(sleeper.pid)]
    sampler = children.sampler("--out", str(out), *target, "--loadgen-pid", str(loadgen.pid))
    assert int(wait_rows(out, 3)[-1]["loadgen_rss_bytes"]) > 0
    loadgen.kill()
    loadgen.wait(5)
    assert sampler.wait(10) == 0
    last = read_rows(out)[-1]
    assert last["event"] == "loadgen_exited" and last["target_alive"] == "1"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_finishes_the_row_and_exits_0(children, sleeper, tmp_path, signum):
    out = tmp_path / "samples.csv"
    sampler = children.sampler("--out", str(out), "--pid", str(sleeper.pid), "--interval", "0.1")
    wait_rows(out, 3)
    sampler.send_signal(signum)
    assert sampler.wait(10) == 0
    assert len(pd.read_csv(out)) == len(read_rows(out)) >= 3


@pytest.mark.parametrize(
    "args",
    [
        ["--pid", "999999999"],
        ["--match", "no-process-has-this-h2-marker-9f3a"],
        ["--cgroup", "/nonexistent/cgroup"],
        ["--pid", "1", "--interval", "fast"],
        ["--pid", "1", "--match", "(unclosed"],
        ["--pid", "1", "--bogus"],
    ],
)
def test_bad_options_or_missing_target_exit_2_with_one_line(children, tmp_path, args):
    out = tmp_path / "samples.csv"
    sampler = children.sampler("--out", str(out), *args)
    assert sampler.wait(10) == 2
    assert len(sampler.stderr.read().strip().splitlines()) == 1
    assert not out.exists()


def test_existing_file_with_another_header_is_refused_and_left_as_it_was(children, sleeper, tmp_path):
    out = tmp_path / "samples.csv"
    out.write_text("a,b\n1,2\n")
    sampler = children.sampler("--out", str(out), "--pid", str(sleeper.pid))
    assert sampler.wait(10) == 2
    assert out.read_text() == "a,b\n1,2\n"


def test_start_sampler_runs_the_cli_with_given_options(sleeper, tmp_path):
    out = tmp_path / "run" / "samples.csv"
    proc = start_sampler(SamplerOptions(out=str(out), pids=[sleeper.pid], interval=0.1, duration=0.35))
    try:
        assert proc.wait(10) == 0
    finally:
        stop_sampler(proc)
    rows = read_rows(out)
    assert 4 <= len(rows) <= 6 and rows[0]["loadgen_rss_bytes"]  # the caller is the load generator
