"""The workload file's [tools] and [loop] sections: synthetic schemas of the size asked, the workload's own
schemas in either API's shape, tool_choice, latency and result-size distributions, max_steps; and every
bad value refused with the file, the section's line and the key."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from scenarios.errors import WorkloadError
from scenarios.workloads.settings import read_workload
from scenarios.workloads.tool_loop import synthetic_schemas


def loop_of(tmp_path, text: str, schemas: object = None):
    if schemas is not None:
        (tmp_path / "tools.json").write_text(json.dumps(schemas))
    path = tmp_path / "w.toml"
    path.write_text(text)
    return read_workload(SimpleNamespace(workload_file=str(path))).tool_loop


def test_synthetic_schemas_have_the_size_asked_in_compact_json():
    schemas = synthetic_schemas(5, 200)
    sizes = [len(json.dumps(s, separators=(",", ":"))) / 4 for s in schemas]
    assert all(abs(size - 200) <= 2 for size in sizes), sizes
    assert [s["function"]["name"] for s in schemas] == [f"tool_{i}" for i in range(1, 6)]
    assert synthetic_schemas(5, 200) == schemas, "the same schemas every run"


def test_tools_and_loop_sections_give_the_loop(tmp_path):
    text = """[tools]
count = 3
schema_tokens = 80
choice = "tool_2"
parallel = false
latency = { distribution = "uniform", min = "50ms", max = "150ms" }
result = 300

[loop]
max_steps = 6
"""
    loop = loop_of(tmp_path, text)
    assert loop is not None and loop.max_steps == 6 and len(loop.tools.schemas) == 3
    assert loop.tools.choice == "tool_2" and loop.tools.parallel is False and loop.tools.concurrent is True
    assert (loop.tools.latency.low, loop.tools.latency.high) == (0.05, 0.15)
    assert loop.tools.result_tokens.mean == 300 and loop.tools.result_tokens.kind == "fixed"
    assert abs(loop.schema_chars / 4 - 240) <= 5
    assert loop.describe()["tools"] == ["tool_1", "tool_2", "tool_3"]


def test_without_loop_section_ten_steps_and_without_tools_no_loop(tmp_path):
    assert loop_of(tmp_path, "[tools]\n").max_steps == 10
    assert loop_of(tmp_path, "seed = 3\n") is None


def test_the_workloads_own_schemas_in_either_shape(tmp_path):
    schemas = [
        {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
        {"name": "fetch", "description": "get a page", "parameters": {"type": "object", "properties": {}}},
    ]
    loop = loop_of(tmp_path, '[tools]\nfile = "tools.json"\nchoice = "required"\n', schemas)
    assert [s["function"]["name"] for s in loop.tools.schemas] == ["search", "fetch"]
    assert loop.tools.schemas[1] == {"type": "function", "function": schemas[1]}


@pytest.mark.parametrize(
    ("text", "schemas", "message"),
    [
        ("[tools]\ncount = 0\n", None, r"w.toml:1: \[tools\] count 0: offer at least 1 tool"),
        ("[tools]\ncolour = 1\n", None, r"w.toml:1: \[tools\] colour: unknown key; \[tools\] takes count"),
        (
            "[tools]\nchoice = 'tool_9'\n",
            None,
            r"\[tools\] choice 'tool_9': use auto, required, none or a tool",
        ),
        ("[tools]\nparallel = 'yes'\n", None, r"\[tools\] parallel 'yes': expected true or false"),
        ("[tools]\nlatency = 'soon'\n", None, r"w.toml:1: \[tools\] latency"),
        ("[tools]\nresult = {mean = -3}\n", None, r"\[tools\] result.mean -3: expected a number of tokens"),
        ("[tools]\nresult = {median = 3}\n", None, r"\[tools\] result.median: unknown key"),
        (
            "[tools]\nlatency = {distribution = 'zipf', mean = 1}\n",
            None,
            r"latency.distribution 'zipf': unknown",
        ),
        (
            "[tools]\nfile = 'tools.json'\ncount = 2\n",
            [],
            r"\[tools\] count: the schema file gives the tools",
        ),
        ("[tools]\nfile = 'tools.json'\n", [], r"tools.json: expected a JSON list of tools"),
        ("[tools]\nfile = 'tools.json'\n", [{"name": "a b"}], r"tools.json: tool 0: name 'a b'"),
        ("[tools]\nfile = 'tools.json'\n", [{"name": "a"}, {"name": "a"}], r"tool name 'a' appears twice"),
        ("[tools]\nfile = 'missing.json'\n", None, r"missing.json"),
        (
            "[tools]\n[loop]\nmax_steps = 0\n",
            None,
            r"w.toml:2: \[loop\] max_steps 0: a task takes at least 1",
        ),
        ("[loop]\nmax_steps = 3\n", None, r"w.toml:1: \[loop\]: needs a \[tools\] section"),
    ],
)
def test_a_bad_tools_or_loop_value_names_file_line_and_key(tmp_path, text, schemas, message):
    with pytest.raises(WorkloadError, match=message) as caught:
        loop_of(tmp_path, text, schemas)
    assert "\n" not in str(caught.value)


def test_tools_from_an_mcp_server_take_its_schemas_time_and_results(tmp_path):
    loop = loop_of(tmp_path, '[tools]\nmcp = "/mcp"\nconcurrent = true\n')
    assert loop.tools.mcp_url == "/mcp" and loop.tools.schemas == () and loop.tools.concurrent
    assert loop.describe()["mcp"] == "/mcp"
    with pytest.raises(WorkloadError, match="latency: the MCP server gives"):
        loop_of(tmp_path, '[tools]\nmcp = "/mcp"\nlatency = "10ms"\n')
    with pytest.raises(WorkloadError, match="mcp: expected the MCP endpoint"):
        loop_of(tmp_path, "[tools]\nmcp = 3\n")


@pytest.mark.parametrize(
    ("value", "url", "command"),
    [
        ("/mcp", "/mcp", None),
        ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp", None),
        ("mcp-server --stdio", None, "mcp-server --stdio"),
        ("/usr/bin/python3 -m server", None, "/usr/bin/python3 -m server"),  # a path with arguments
    ],
)
def test_an_mcp_value_is_an_endpoint_or_a_stdio_servers_command(tmp_path, value, url, command):
    tools = loop_of(tmp_path, f"[tools]\nmcp = {json.dumps(value)}\n").tools
    assert (tools.mcp_url, tools.mcp_command, tools.from_mcp) == (url, command, True)


def test_an_mcp_command_whose_quoting_does_not_close_is_one_line(tmp_path):
    with pytest.raises(WorkloadError, match="mcp 'server \"--flag': No closing quotation") as caught:
        loop_of(tmp_path, "[tools]\nmcp = 'server \"--flag'\n")
    assert "\n" not in str(caught.value)
