"""Every registered option, round trip: a value other than its default, given on the command line, in
locust.conf, as its LOCUST_* variable and (where the start form shows it) as the form's text, arrives in
the settings the agents and profiles read (KitSettings: its TargetSettings, ProfileOptions, AgentSettings
and the run's names; the sampler's options are built from these). An option renamed in its one
declaration is found nowhere else: the round trip fails with a line naming it.

Locust's real parser with the kit's options (tests/kit/conftest.py), in-process: nothing is started.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from locust.argument_parser import get_empty_argument_parser

from agents import presets
from agents.gateways import options as gateway_options
from agents.settings import SET_BY_RUN, AgentSettings
from contract.cli import add, env_var, flag_of
from kit.help import kit_parser
from kit.settings import agent_options, read_settings, refresh
from kit.start_form import StartForm
from scenarios import options as profile_options
from tests.paths import REPO

EXAMPLES = REPO / "examples"
SESSIONS = str(EXAMPLES / "sessions" / "research-agent.jsonl")
WORKLOADS = EXAMPLES / "workloads"
FLAGS = (argparse._StoreTrueAction, argparse._StoreFalseAction)


@dataclass(frozen=True)
class Sample:
    """A valid value other than the default, and the other options it needs to mean something."""

    value: str
    context: tuple[str, ...] = ()


# By the kind of value the option takes; an option that needs more says so in SAMPLES.
BY_CONVERT = {
    "duration": "7s",
    "size": "2MiB",
    "positive_whole": "7",
    "positive": "2.5",
    "command_line": "run-me --flag 'a b'",
    "json_object": '{"input": 1}',
}
BY_TYPE = {"positive_duration": "7s", "positive_int": "7", "whole": "3", "positive_float": "2.5"}
SAMPLES: dict[str, Sample] = {
    "gateway": Sample("hermes"),
    "sim_args": Sample("--ttft-ms 5"),
    "target_cmd": Sample("sleep 1"),
    "health_path": Sample("/up"),
    "target_env": Sample("HOME=/tmp"),
    "model_calls_url": Sample("http://127.0.0.1:9/v1"),
    "sampler_url": Sample("http://127.0.0.1:9"),
    "sampler_token_env": Sample("OTHER_TOKEN"),
    "run_dir": Sample("runs/elsewhere"),
    "run_id": Sample("named-run"),
    "api_key_env": Sample("SOME_API_KEY"),
    "session_header": Sample("X-Session-Id"),
    "session_policy": Sample("3"),
    "workload_file": Sample(str(WORKLOADS / "chat-agent.toml")),
    "input_tokens": Sample("300"),
    "input_tokens_stdev": Sample("20", ("--input-tokens", "300")),
    "input_tokens_min": Sample("100", ("--input-tokens", "300", "--input-tokens-stdev", "20")),
    "input_tokens_max": Sample("400", ("--input-tokens", "300", "--input-tokens-stdev", "20")),
    "input_tokens_distribution": Sample("lognormal", ("--input-tokens", "300", "--input-tokens-stdev", "20")),
    "output_tokens": Sample("30"),
    "output_tokens_stdev": Sample("5", ("--output-tokens", "30")),
    "output_tokens_min": Sample("10", ("--output-tokens", "30", "--output-tokens-stdev", "5")),
    "output_tokens_max": Sample("40", ("--output-tokens", "30", "--output-tokens-stdev", "5")),
    "output_tokens_distribution": Sample(
        "lognormal", ("--output-tokens", "30", "--output-tokens-stdev", "5")
    ),
    "prefix_tokens": Sample("100", ("--input-tokens", "300")),
    "dataset": Sample(str(WORKLOADS / "chats.jsonl")),
    "dataset_order": Sample("sequential", ("--dataset", str(WORKLOADS / "chats.jsonl"))),
    "trace": Sample(str(WORKLOADS / "trace.jsonl")),
    "trace_speed": Sample("2", ("--trace", str(WORKLOADS / "trace.jsonl"))),
    "think_time": Sample("2s"),
    "seed": Sample("7"),
    "sessions": Sample(SESSIONS),
    "sessions_select": Sample("conversation-819a1cbdf946", ("--sessions", SESSIONS)),
    "sessions_skip": Sample("broken", ("--sessions", SESSIONS)),
    "live_tools": Sample("", ("--sessions", SESSIONS, "--workload", str(WORKLOADS / "agent-loop.toml"))),
    "mcp_url": Sample("/other/mcp"),
    "mcp_tool_mix": Sample("echo=2"),
    "mcp_arguments": Sample("arguments.json"),
    "spec_file": Sample(str(EXAMPLES / "specs" / "rest-sessions.toml")),
    "prices": Sample(str(REPO / "prices.toml")),
    "load_profile": Sample("average"),
    **{dest: Sample("7s") for dest in ("ramp", "hold", "settle", "step_every", "duration", "baseline")},
    **{dest: Sample("7s") for dest in ("round_hold", "step_max_hold")},
    "peak_users": Sample("7"),
    "base_users": Sample("2"),
    "spike_users": Sample("9"),
    "step_users": Sample("2"),
    "stages": Sample("7s:2"),
    "rounds": Sample("2,3"),
    "arrival_rate": Sample("2"),
    "max_agents": Sample("7"),
    "burstiness": Sample("0.5"),
    "arrival_seed": Sample("7"),
    "sweep_rates": Sample("3"),
    "thresholds": Sample(str(EXAMPLES / "thresholds.toml")),
    "threshold": Sample("ttft_ms p95 < 500"),
    "slo": Sample("ttft_ms <= 500"),
    "memory_budget": Sample("512MiB"),
    "capacity_at_n": Sample("7"),
    "churn_cycles": Sample("3"),
    "churn_batch": Sample("2"),
    "step_agents": Sample("3"),
    "min_available": Sample("1GiB"),
    "cpu_limit": Sample("80"),
    "project": Sample("4GiB,2cores"),
}


def kit_option_actions() -> list[argparse.Action]:
    """Every option the kit registers (its rooms' and its profiles'), none of Locust's own."""
    locust_own = {action.dest for action in get_empty_argument_parser(add_help=False)._actions}
    return [a for a in kit_parser()._actions if a.option_strings and a.dest not in locust_own]


def sample(action: argparse.Action) -> Sample:
    named = flag_of(action).removeprefix("--").replace("-", "_")  # a renamed dest keeps its flag's sample
    if (chosen := SAMPLES.get(action.dest) or SAMPLES.get(named)) is not None:
        return chosen
    if isinstance(action, FLAGS):
        return Sample("")
    if action.choices:
        return Sample(next(str(c) for c in reversed(list(action.choices)) if c != action.default))
    convert = getattr(getattr(action, "convert", None), "__name__", None)
    kind = getattr(action.type, "__name__", None)
    return Sample(BY_CONVERT.get(convert or "") or BY_TYPE.get(kind or "") or "some-text")


def flattened(value: Any, path: str = "") -> dict[str, Any]:
    """A settings record as path -> leaf value, through its nested records (compared fields only)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found: dict[str, Any] = {}
        for spec in dataclasses.fields(value):
            if spec.compare:
                found |= flattened(getattr(value, spec.name), f"{path}.{spec.name}".lstrip("."))
        return found
    return {path: value}


def changed(before: Any, after: Any) -> set[str]:
    was, now = flattened(before), flattened(after)
    return {path for path in was.keys() | now.keys() if was.get(path) != now.get(path)}


def given_by(channel: str, action: argparse.Action, value: str, tmp_path: Path, monkeypatch) -> dict:
    """The `parse` fixture's arguments (and environment) that give this option this value."""
    flag = flag_of(action)
    if channel == "command line":
        return {"argv": (flag,) if isinstance(action, FLAGS) else (flag, value)}
    text = (
        "true"
        if isinstance(action, FLAGS)
        else f"[{value}]"
        if action.nargs is None and _appends(action)
        else value
    )
    if channel == "LOCUST_*":
        monkeypatch.setenv(env_var(flag), text)
        return {"argv": ()}
    conf = tmp_path / "locust.conf"
    conf.write_text(f"{flag.removeprefix('--')} = {text}\n", encoding="utf-8")
    return {"argv": (), "config": str(conf)}


def _appends(action: argparse.Action) -> bool:
    return isinstance(action, argparse._AppendAction)


def round_trip(
    parse, action: argparse.Action, channel: str, tmp_path: Path, monkeypatch, baselines: dict | None = None
) -> list[str]:
    """What is wrong with this option's value arriving in the settings through this channel: nothing, or
    one line naming the option. `baselines`: the settings without it, by the options it needs, kept."""
    chosen = sample(action)
    flag = flag_of(action)
    try:
        known = {} if baselines is None else baselines
        if chosen.context not in known:
            known[chosen.context] = read_settings(parse(*chosen.context), "run-1")
        before = known[chosen.context]
        if channel == "web form":
            after = _through_the_form(parse(*chosen.context), action, chosen.value, before)
        else:
            given = given_by(channel, action, chosen.value, tmp_path, monkeypatch)
            after = read_settings(parse(*chosen.context, *given["argv"], config=given.get("config")), "run-1")
    except Exception as exc:  # the line to show is the one the kit raised
        return [f"{flag} {chosen.value!r} via {channel}: {type(exc).__name__}: {exc}"]
    moved = changed(before, after)
    fields = {spec.name for spec in dataclasses.fields(AgentSettings)} - SET_BY_RUN
    where = f"agent.{action.dest}" if action.dest in fields else None
    if not moved or (where and not any(path.split(".")[:2] == where.split(".") for path in moved)):
        return [f"{flag} {chosen.value!r} via {channel}: not found in the settings ({where or 'any field'})"]
    return []


def _through_the_form(options: argparse.Namespace, action: argparse.Action, value: str, before) -> Any:
    """The form's text as a web UI start applies it (kit/start_form.py: Locust's conversion of a field,
    then the one settings conversion, refresh)."""
    text = "true" if isinstance(action, FLAGS) else value
    form = StartForm.of(options, {action.dest: {}})
    return refresh(before, form.options_of(options, {action.dest: text}))


ACTIONS = kit_option_actions()
CHANNELS = ("command line", "locust.conf", "LOCUST_*", "web form")


def test_every_registered_option_is_sampled():
    print(f"{len(ACTIONS)} kit options round-tripped")
    assert len(ACTIONS) >= 120 and len({a.dest for a in ACTIONS}) == len(ACTIONS)


def given_through(channel: str) -> list[argparse.Action]:
    """The options a channel can set: all of them, the web form only those it shows."""
    return [a for a in ACTIONS if channel != "web form" or getattr(a, "include_in_web_ui", False)]


@pytest.mark.parametrize("channel", CHANNELS, ids=[f"{c}: {len(given_through(c))} options" for c in CHANNELS])
def test_every_option_arrives_in_the_settings(parse, channel, tmp_path, monkeypatch):
    shown = given_through(channel)
    problems: list[str] = []
    baselines: dict = {}
    for action in shown:
        with monkeypatch.context() as scoped:
            problems += round_trip(parse, action, channel, tmp_path, scoped, baselines)
    assert problems == [], f"{len(shown)} options via {channel}, {len(problems)} lost:\n" + "\n".join(
        problems
    )


def _renamed(module, flag: str, dest: str):
    """`module`'s `add` with `flag` declared under another dest: a rename in its one declaration."""

    def add_renamed(group, *flags: str, **kwargs):
        return add(group, *flags, **(kwargs | {"dest": dest} if flag in flags else kwargs))

    return add_renamed


@pytest.mark.parametrize(
    "module, flag, dest",
    [(gateway_options, "--a2a-path", "a2a_endpoint"), (profile_options, "--peak-users", "peak_agents")],
)
def test_a_dest_renamed_in_its_declaration_fails_the_round_trip_naming_it(
    parse, module, flag, dest, tmp_path, monkeypatch
):
    monkeypatch.setattr(module, "add", _renamed(module, flag, dest))
    action = next(a for a in kit_option_actions() if flag in a.option_strings)
    problems = round_trip(parse, action, "command line", tmp_path, monkeypatch)
    assert len(problems) == 1 and problems[0].startswith(f"{flag} "), problems
    print(problems[0])


def test_an_agent_option_with_no_field_or_a_field_with_no_option_is_one_line(monkeypatch):
    monkeypatch.setattr(gateway_options, "add", _renamed(gateway_options, "--a2a-path", "a2a_endpoint"))
    with pytest.raises(RuntimeError) as caught:
        agent_options(kit_parser()._actions)
    assert str(caught.value).count("\n") == 0
    assert "a2a_path" in str(caught.value) and "--a2a-path" in str(caught.value)


def test_presets_default_only_options_and_name_their_stdio_option():
    dests = {a.dest for a in ACTIONS}
    flags = {flag_of(a) for a in ACTIONS}
    for chosen in presets.PRESETS.values():
        assert set(chosen.defaults) <= dests, chosen.name
        assert not chosen.stdio_command or chosen.stdio_flag in flags, chosen.name
