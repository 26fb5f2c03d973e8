"""`--gateway mcp` safe, bounded and honest, as a user runs it (Locust in a subprocess) against the
simulator's MCP endpoint with known knobs: the default mix calls only the tools annotated read-only and
closed-world (the server's own counts), a named one is called; a mix naming a tool the server lacks is
refused before load; liveness speaks MCP, so a server whose /health is 404 or 500 is not ended by it;
answers MCP ignores (to notifications/initialized, to the DELETE) of 1 GiB are read within the bounds;
a stdio server that never answers and ignores SIGTERM leaves no process and no hung run.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pandas as pd
import psutil
import pytest

from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, REQUEST
from simgateway import launch
from tests.locust_runs import locust_command, run_locust
from tests.paths import REPO

pytestmark = pytest.mark.e2e

PRELOAD = "--mcp-preload"
# a read-only closed-world tool, a destructive one, an open-world one, an unannotated one
ANNOTATED = ["--mcp-tools", "look,wipe:::destructive,browse:::open,plain:::none"]
GIB = 1 << 30
RSS_BAR_MIB = 300


def smoke(run_dir: Path, host: str | None, *extra: str, agents: int = 2, duration: str = "4s"):
    host_args = ("--host", host) if host else ()
    profile = ("--load-profile", "smoke", "--peak-users", str(agents), "--duration", duration)
    return run_locust(run_dir, "--gateway", "mcp", *host_args, *profile, *extra, timeout=90)


def tool_calls(url: str) -> dict[str, int]:
    return httpx.get(f"{url}/v1/sim/mcp").json()["tool_calls"]


def test_the_default_mix_calls_only_read_only_tools_and_a_named_destructive_one_is_called(tmp_path):
    with launch.running([PRELOAD, *ANNOTATED]) as gw:
        done = smoke(tmp_path / "default", gw.url)
        default = tool_calls(gw.url)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    assert set(default) == {"look"} and default["look"] > 0, default
    (line,) = [line for line in done.stderr.splitlines() if "MCP mix:" in line]
    for said in ("look=1", "wipe (destructive)", "browse (open-world)", "plain (unannotated)"):
        assert said in line, line
    with launch.running([PRELOAD, *ANNOTATED]) as gw:
        named = smoke(tmp_path / "named", gw.url, "--mcp-tool-mix", "wipe=1")
        called = tool_calls(gw.url)
    assert named.returncode == exit_codes.OK, named.stderr[-2000:]
    assert set(called) == {"wipe"} and called["wipe"] > 0, called


def test_a_mix_naming_a_tool_the_server_lacks_is_refused_before_load_with_one_line(tmp_path):
    run_dir = tmp_path / "run"
    with launch.running([PRELOAD]) as gw:
        done = smoke(run_dir, gw.url, "--mcp-tool-mix", "search=1,nope=2")
        server = httpx.get(f"{gw.url}/v1/sim/mcp").json()
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if "nope" in line]
    assert len(lines) == 1 and "lists no tool nope" in lines[0] and "Traceback" not in done.stderr
    assert not run_dir.exists()  # refused before the run directory
    assert server["tool_calls"] == {} and server["sessions"]["open"] == 0  # the check's session closed


@pytest.mark.parametrize("status", [404, 500])
def test_a_server_whose_health_path_fails_is_not_ended_by_liveness(tmp_path, status):
    # liveness 2 s in a 6 s run: a /health probe would end it after 2 s (exit 3); MCP's ping does not
    with launch.running([PRELOAD, "--health-status", str(status)]) as gw:
        assert httpx.get(f"{gw.url}/health").status_code == status
        done = smoke(tmp_path, gw.url, "--liveness-timeout", "2s", duration="6s")
        server = httpx.get(f"{gw.url}/v1/sim/mcp").json()
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    meta = json.loads((tmp_path / schema.RUN_JSON).read_text())
    assert "died" not in str(meta.get("stop_reason")) and not meta["ended_early"], meta.get("stop_reason")
    assert server["methods"].get("ping", 0) >= 3  # the probe pinged its session through the run
    assert server["sessions"]["open"] == 0


def peak_rss_mib(proc: subprocess.Popen) -> float:
    """The process's peak RSS, polled every 50 ms until it exits."""
    peak = 0
    with_psutil = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            peak = max(peak, with_psutil.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    return peak / (1 << 20)


def test_huge_answers_to_what_mcp_ignores_stay_within_the_bounds_and_fail_the_session(tmp_path):
    knobs = [PRELOAD, "--hostile", "mcp-huge-ignored", "--hostile-bytes", str(GIB)]
    with launch.running(knobs) as gw:
        args = ["--gateway", "mcp", "--host", gw.url, "--load-profile", "smoke", "--peak-users", "2"]
        command = locust_command(tmp_path, *args, "--duration", "3s", "--request-timeout", "10s")
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peak: list[float] = []
        watcher = threading.Thread(target=lambda: peak.append(peak_rss_mib(proc)))
        watcher.start()
        _, err = proc.communicate(timeout=120)
        watcher.join()
    assert peak[0] < RSS_BAR_MIB, peak
    assert proc.returncode == exit_codes.LOAD_NOT_DELIVERED, err.decode()[-2000:]
    agents = pd.read_csv(tmp_path / schema.AGENTS_CSV)
    assert (agents[AGENT.event] == AGENT_EVENT.failed).all() and len(agents) == 2
    assert agents[AGENT.error].str.contains("notifications/initialized.*--max-response-bytes").all()
    stop = json.loads((tmp_path / schema.RUN_JSON).read_text())["stop_reason"]
    assert stop.startswith("load not delivered: 0 tools/call succeeded") and "TooLarge" in stop, stop


def silent_server(marker: Path) -> str:
    """A stdio 'server' that reads nothing, answers nothing and ignores SIGTERM, with a child that does
    the same (a launcher's): `marker` in both command lines finds them."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    inner = shlex.join([sys.executable, "-c", code, str(marker)])
    return shlex.join(["sh", "-c", f"{inner} & exec {inner}"])


def left(marker: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if (
            str(marker) in " ".join(proc.info["cmdline"] or ())
            and proc.info["status"] != psutil.STATUS_ZOMBIE
        ):
            found.append(proc.pid)
    return found


def test_a_stdio_server_that_never_answers_and_ignores_sigterm_leaves_nothing_and_no_hung_run(tmp_path):
    marker = tmp_path / "silent-mcp-server"
    caps = ("--request-timeout", "2s", "--mcp-close-timeout", "1s")
    done = smoke(tmp_path / "run", None, "--mcp-command", silent_server(marker), *caps, duration="4s")
    ended = time.time()
    assert done.returncode == exit_codes.LOAD_NOT_DELIVERED, done.stderr[-2000:]
    assert left(marker) == []
    meta = json.loads((tmp_path / "run" / schema.RUN_JSON).read_text())
    assert ended - meta["start_ts"] <= 4 + 1 + 5 + 5  # -t, the close timeout, 5 s; 5 s: the report's
    init = pd.read_csv(tmp_path / "run" / schema.REQUESTS_CSV).query(
        f"{REQUEST.operation} == 'mcp.initialize'"
    )
    assert len(init) >= 2 and set(init[REQUEST.error_kind]) == {"timeout"}
