"""The sampler service (`python -m sampler serve`) and the kit's puller: token, cursor, clock offset, gaps.

Real HTTP on 127.0.0.1, real sampler processes; the clock skew is set in-process where a test needs a
known one (namespaces share the kernel's clock)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import httpx
import pytest

from contract.exit_codes import BAD_INPUT
from contract.schema import SAMPLE_COLUMNS, SAMPLE_EVENT
from kit.remote_sampler import RemoteSampler
from sampler.csv_out import SampleWriter
from sampler.loop import Sampler
from sampler.options import SamplerOptions
from sampler.row_buffer import RowBuffer
from sampler.serve import ServiceState, make_server, serve
from sampler.service_client import ServiceClient, best_offset
from tests.sampler.support import REPO, SLEEPER, Children, read_rows, wait_for

TOKEN = "test-token-0123456789abcdef"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "LOADKIT_SAMPLER_TOKEN": TOKEN}


@pytest.fixture
def children():
    kids = Children()
    yield kids
    kids.stop_all()


def start_service(children: Children, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """A service on a free loopback port; returns it and its URL (read from its first stderr line)."""
    argv = [sys.executable, "-m", "sampler", "serve", "--port", "0", "--interval", "0.1", *args]
    proc = children.start(argv, env=env or ENV, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://\S+)", line)
    assert match, f"no listening line: {line!r}"
    return proc, match.group(1)


def test_row_buffer_reads_from_a_cursor_and_counts_lost_rows():
    buffer = RowBuffer(keep=3)
    for i in range(5):
        buffer.write({"n": str(i)})
    page = buffer.since(0, limit=10)
    assert (page.first, page.next, page.lost) == (2, 5, 2)
    assert [r["n"] for r in page.rows] == ["2", "3", "4"]
    assert [r["n"] for r in buffer.since(3, limit=1).rows] == ["3"]
    end = buffer.since(99, limit=10)
    assert (end.next, end.lost, end.rows) == (5, 0, [])


def test_best_offset_takes_the_fastest_round_trip():
    probes = [(0.0, 100.9, 1.0), (2.0, 102.05, 2.1), (3.0, 103.5, 3.6)]
    offset = best_offset(probes)
    assert offset.rtt_s == pytest.approx(0.1)
    assert offset.offset_s == pytest.approx(100.0)


@pytest.mark.e2e
def test_service_without_a_token_is_bad_input_in_one_line(children):
    env = {k: v for k, v in ENV.items() if k != "LOADKIT_SAMPLER_TOKEN"}
    proc = children.start(
        [sys.executable, "-m", "sampler", "serve", "--pid", str(os.getpid())],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.wait(20) == BAD_INPUT
    err = proc.stderr.read().strip().splitlines()
    assert len(err) == 1 and "LOADKIT_SAMPLER_TOKEN" in err[0]


@pytest.mark.e2e
def test_service_answers_only_with_the_token_and_never_prints_it(children):
    sleeper = children.python(SLEEPER)
    assert sleeper.stdout.readline().strip() == b"ready"
    proc, url = start_service(children, "--pid", str(sleeper.pid))
    assert url.startswith("http://127.0.0.1:")  # bound to loopback unless told otherwise
    assert httpx.get(f"{url}/v1/rows").status_code == 401
    assert httpx.get(f"{url}/v1/rows", headers={"Authorization": "Bearer wrong"}).status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    doc = wait_for(
        lambda: (d := httpx.get(f"{url}/v1/rows", params={"since": 0}, headers=auth).json())["rows"] and d,
        what="rows from the service",
    )
    assert doc["columns"] == list(SAMPLE_COLUMNS) and doc["first"] == 0
    row = dict(zip(doc["columns"], doc["rows"][0], strict=True))
    assert int(row["target_rss_bytes"]) > 0 and row["host"]
    later = httpx.get(f"{url}/v1/rows", params={"since": doc["next"]}, headers=auth).json()
    assert later["first"] == 0 and later["next"] >= doc["next"]
    proc.terminate()
    assert proc.wait(10) == 0
    assert TOKEN not in proc.stderr.read()


@pytest.mark.timing
def test_puller_applies_the_measured_clock_offset(tmp_path):
    """A service whose clock runs 100 s ahead: pulled rows land on our time axis within 20 ms."""
    skew = 100.0
    ahead = lambda: time.time() + skew  # noqa: E731
    rows = RowBuffer(keep=1000)
    sampler = Sampler(
        SamplerOptions(out="", pids=[os.getpid()], interval=0.1, host_label="far-host"),
        clock=ahead,
        sink=rows,
    )
    state = ServiceState(TOKEN, rows, "far-host", 0.1, clock=ahead)
    server = make_server(state, "127.0.0.1", 0)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(sampler, state, server, stop))
    thread.start()
    out = tmp_path / "samples.csv"
    record: dict = {}
    client = ServiceClient(f"http://127.0.0.1:{server.server_address[1]}", TOKEN, time.time)
    puller = RemoteSampler(client, SampleWriter(str(out)), record)
    try:
        puller.connect()
        wait_for(lambda: puller.pull(time.time()) or len(read_rows(out)) >= 5, what="5 pulled rows")
        pulled_at = time.time()
    finally:
        stop.set()
        thread.join(10)
        puller.sink.close()
    assert record["clock"][0]["offset_s"] == pytest.approx(skew, abs=0.02)
    got = read_rows(out)
    assert {r["host"] for r in got} == {"far-host"}
    for r in got:
        assert pulled_at - 5.0 < float(r["ts"]) <= pulled_at + 0.02


@pytest.mark.e2e
def test_a_silent_service_is_a_recorded_gap_and_a_restarted_one_resumes(children, tmp_path):
    sleeper = children.python(SLEEPER)
    assert sleeper.stdout.readline().strip() == b"ready"
    proc, url = start_service(children, "--pid", str(sleeper.pid))
    out = tmp_path / "samples.csv"
    record: dict = {}
    puller = RemoteSampler(
        ServiceClient(url, TOKEN, time.time, timeout_s=0.5), SampleWriter(str(out)), record
    )
    puller.connect()
    wait_for(lambda: puller.pull(time.time()) or len(read_rows(out)) >= 3, what="rows before the kill")
    proc.kill()
    proc.wait(10)
    assert puller.pull(time.time()) is True  # the gap opens: run.json must be saved
    assert puller.pull(time.time()) is False  # one gap, not one per failed pull
    gap_rows = [r for r in read_rows(out) if r["event"].startswith(SAMPLE_EVENT.sampler_gap)]
    assert len(gap_rows) == 1
    assert all(gap_rows[0][c] == "" for c in SAMPLE_COLUMNS if c not in ("ts", "host", "event"))
    assert record["gaps"][0]["end_ts"] is None
    port = url.rsplit(":", 1)[1]
    args = ["--pid", str(sleeper.pid), "--port", port]
    argv = [sys.executable, "-m", "sampler", "serve", "--interval", "0.1", *args]
    children.start(argv, env=ENV, stderr=subprocess.DEVNULL)
    before = len(read_rows(out))
    wait_for(lambda: puller.pull(time.time()) or len(read_rows(out)) >= before + 3, what="rows after restart")
    puller.sink.close()
    gap = record["gaps"][0]
    assert gap["end_ts"] is not None and gap["end_ts"] > gap["start_ts"]
    assert len(record["clock"]) == 2  # the restarted service's clock measured again
    json.dumps(record)  # run.json can hold it


@pytest.mark.e2e
@pytest.mark.parametrize("query", [{"limit": "-3"}, {"since": "-1"}, {"limit": "x"}, {"since": "9" * 5000}])
def test_a_bad_cursor_or_limit_is_a_400_with_one_line_not_a_traceback(children, query):
    sleeper = children.python(SLEEPER)
    assert sleeper.stdout.readline().strip() == b"ready"
    proc, url = start_service(children, "--pid", str(sleeper.pid))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.get(f"{url}/v1/rows", params=query, headers=auth)
    assert answer.status_code == 400 and "since and limit" in answer.json()["error"], answer.text
    assert httpx.get(f"{url}/v1/rows", params={"limit": "0"}, headers=auth).status_code == 200
    proc.terminate()
    assert proc.wait(10) == 0
    assert "Traceback" not in proc.stderr.read()
