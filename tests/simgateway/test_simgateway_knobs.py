"""The gateway's command line: defaults, bad values (one line, exit 2), the ready line, shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from simgateway import launch
from simgateway.client import request
from simgateway.knob_help import HELP
from simgateway.knobs import Knobs, build_parser, parse_knobs


def test_knob_parser_defaults_equal_the_knobs_record_defaults():
    assert parse_knobs(["--port", "0"]) == Knobs()


@pytest.mark.e2e
@pytest.mark.parametrize(
    "bad",
    [["--error-rate", "1.5"], ["--agent-mib", "-1"], ["--usage-dialect", "klingon"],
     ["--dispatch-interval", "0"], ["--max-in-progress", "x"]],
)  # fmt: skip
def test_bad_knob_value_exits_2_with_one_line(bad):
    done = subprocess.run([sys.executable, "-m", "simgateway", "--port", "0", *bad], capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("simgateway: error:") and bad[0] in lines[0]


@pytest.mark.e2e
def test_taken_port_fails_start_with_one_line():
    with launch.running([]) as gw:
        port = gw.url.rsplit(":", 1)[1]
        with pytest.raises(launch.GatewayStartError, match="simgateway did not start: simgateway: error"):
            launch.start([], port=int(port))


@pytest.mark.e2e
def test_ready_line_gives_a_url_whose_health_names_the_gateway_pid_and_sigterm_exits_0():
    with launch.running(["--seed", "7"]) as gw:
        health = request(gw.url, "GET", "/health").json()
        assert health["status"] == "ok" and health["pid"] == gw.pid and health["uptime_s"] >= 0
        gw.proc.send_signal(signal.SIGTERM)
        assert gw.proc.wait(10) == 0


def test_help_gives_every_knob_its_words_and_the_default_the_knobs_record_declares():
    """`python -m simgateway --help`: every knob with what it sets and its default, the default the one
    the Knobs record holds (the parser's own may not drift from it)."""
    parser = build_parser()
    fields = Knobs.__dataclass_fields__
    knobs = [a for a in parser._actions if a.dest in fields]
    assert len(knobs) >= 50
    for action in knobs:
        assert action.help and "default:" in action.help, action.dest
        assert action.help.split("(default")[0].strip(), f"{action.dest}: no words (simgateway/knob_help.py)"
        if action.dest != "mcp_tools":  # parsed from its text into records
            assert action.default == fields[action.dest].default, action.dest
    assert set(HELP) <= {o for a in parser._actions for o in a.option_strings}  # no help for a gone knob
    text = " ".join(parser.format_help().split())
    assert "first content chunk this long after the request arrived (ms) (default: 300.0)" in text
