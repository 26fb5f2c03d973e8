"""Fast checks of the capacity protocol's parts: a spec file's [capacity] section (and its one-line
errors), presets' session protocols, and RSS from /proc/PID/statm against smaps_rollup's exact figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents import presets
from agents.capacity.idle_sessions import AcpSessions
from agents.gateways.spec import SpecError, load_spec, parse_spec
from sampler.procfs import ProcStatReader
from tests.locust_runs import REPO

SPEC = REPO / "examples" / "specs" / "rest-sessions.toml"


def test_the_example_spec_describes_create_ready_prompt_and_close():
    steps = load_spec(str(SPEC)).capacity
    assert [t.path for t in steps.create] == ["/api/v2/workspaces/loadkit/conversations"]
    assert steps.create[0].id_path == "conversation.id"
    assert steps.ready.ready == ("ready",) and steps.ready.request.method == "GET"
    assert steps.close.method == "DELETE" and steps.prompt.path.endswith("/messages")


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"close": {"path": "/x"}}, "missing [capacity.create]"),
        ({"create": {"path": "/x"}}, 'needs id = "json.path"'),
        ({"create": {"path": "/x", "id": "id"}, "then": {"path": "/y"}}, "array of tables"),
        ({"create": {"path": "/x", "id": "id"}, "ready": {"path": "/y", "status": "s"}}, "ready = [values]"),
        ({"create": {"path": "/x", "id": "id"}, "nope": 1}, "unknown key(s) ['nope']"),
    ],
)
def test_a_bad_capacity_section_fails_with_one_line_naming_the_key(section, message):
    with pytest.raises(SpecError) as caught:
        parse_spec({"capacity": section}, "my.toml")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_preset_has_a_session_protocol_or_says_why_not():
    for name, chosen in presets.PRESETS.items():
        if chosen.sessions is None:
            with pytest.raises(presets.GatewayError, match="capacity/churn: "):
                presets.session_protocol(chosen)
        else:
            assert presets.session_protocol(chosen) is chosen.sessions, name
    shared = presets.session_protocol(presets.preset("acp"), "shared")
    assert shared == AcpSessions(per_process=False)


def test_cleanup_closes_the_gateways_sessions_and_refuses_acps_in_one_line():
    assert presets.closable_sessions(presets.preset("simulator")) is presets.preset("simulator").sessions
    with pytest.raises(presets.GatewayError, match="^ACP sessions live in agent processes") as caught:
        presets.closable_sessions(presets.preset("acp"))
    assert "\n" not in str(caught.value)


def smaps_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no Rss line")


@pytest.mark.e2e
def test_rss_comes_from_statm_and_matches_smaps_rollup():
    code = (
        "b = bytearray(200 * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint(1, flush=True)\ninput()"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # 200 MiB resident
        reader = ProcStatReader()
        read = reader.read(child.pid).rss_bytes
        exact = smaps_rss(child.pid)
        reader.close()
    finally:
        child.kill()
        child.wait()
    assert read >= 200 * 2**20
    assert abs(read - exact) <= 64 * 1024  # the idle child's exact RSS, two reads apart
