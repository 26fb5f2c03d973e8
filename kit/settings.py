"""Locust's parsed options (command line, LOCUST_*, locust.conf, the web UI form) converted ONCE into the
run's frozen, typed, validated settings, and the agents' share handed down to them.

Called at init, and again when the web UI starts a test (its form may have changed the options): an
empty form field means "not given", so the documented default. Raises InputError with one line; it
starts, creates and sends nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agents import presets
from agents.capacity.drivers import SerialDriver
from agents.options import declared as declared_agent_options
from agents.settings import SET_BY_RUN, AgentSettings
from agents.wire.target_origin import HostCredentials
from analysis.prices import load_prices
from contract.cli import flag_of
from contract.errors import InputError
from kit import input_checks
from kit.help import kit_parser
from scenarios import ceilings, registry
from scenarios.options import ProfileOptions, read_options
from scenarios.profile import Profile
from scenarios.slo import Slo, check_goodput_thresholds
from scenarios.thresholds import Threshold
from scenarios.workloads.session_file import select_sessions
from scenarios.workloads.settings import WorkloadSettings, read_workload

RUNS_ROOT = Path("runs")


@dataclass(frozen=True)
class TargetSettings:
    """What to load and watch: the gateway, how it is started or found, how it is sampled."""

    host: str | None  # without its userinfo: the URL every file and line shows
    host_auth: HostCredentials | None  # --host's userinfo, sent as Basic auth to that host only
    host_check: bool  # GET --host once before load (--no-host-check skips it)
    sim_args: str
    target_cmd: str | None
    health_path: str
    start_timeout: float
    liveness_timeout: float
    sample_interval: float
    trend_min_duration: float  # seconds of samples after warm-up a soak verdict needs
    pss_every: int
    queue_url: str | None
    queue_field: str | None
    inflight_field: str | None
    model_calls_url: str | None  # a kit simulator serving as the gateway's model: its calls are read


@dataclass(frozen=True)
class RunNames:
    """What the user named (--run-id, --run-dir, --html): the first run's names, and the stems of the
    web UI's later runs' (ID-2, DIR-2...)."""

    run_id: str | None
    run_dir: Path | None
    html_file: str | None
    reuse_run_dir: bool = False  # --reuse-run-dir: write into a non-empty --run-dir


@dataclass(frozen=True)
class KitSettings:
    """Everything a run reads of its options; rooms get their own part (agent, profile, target)."""

    preset: presets.GatewayPreset
    target: TargetSettings
    run_id: str
    run_dir: Path  # this run's directory, from here to its last writer (created once: kit/session.py)
    named: RunNames
    prices: str | None
    host_price: float | None
    profile_name: str
    profile: ProfileOptions
    # the profile built from them, once: the checks before load and the load read this one (each read of
    # the options builds its own: a web-UI run, whose manual profile takes edits, never shares one)
    built_profile: Profile = dataclasses.field(compare=False, repr=False)
    thresholds: tuple[Threshold, ...]
    slos: tuple[Slo, ...]
    agent: AgentSettings


def read_settings(options: Any, run_id: str) -> KitSettings:
    """Convert and check every option; `run_id` is the given or generated id."""
    preset = presets.preset(options.gateway)
    run_id = input_checks.run_id_on(input_checks.run_id(run_id), preset.lowercases_keys, preset.name)
    given_dir = _given(options, "run_dir")
    named = RunNames(
        _given(options, "run_id"),
        Path(given_dir) if given_dir else None,
        _given(options, "html_file"),
        bool(_given(options, "reuse_run_dir")),
    )
    run_dir = named.run_dir or RUNS_ROOT / run_id
    prices = _given(options, "prices")
    if prices:
        load_prices(prices)  # a bad table fails now, not at the report
    target = _target(options, preset)
    settings = KitSettings(
        preset=preset,
        target=target,
        run_id=run_id,
        run_dir=run_dir,
        named=named,
        prices=prices,
        host_price=_given(options, "host_price"),
        **_form_part(options, preset, run_id, run_dir, target.host_auth),
    )
    input_checks.headers(settings.agent.api_key_env, settings.agent.session_header)
    refuse_unfit_driver(settings)
    check_mcp_urls(settings)
    return settings


def check_mcp_urls(settings: KitSettings) -> None:
    """--mcp-url stays on --host's origin (agents/wire/target_origin.py); the agent loop's MCP server may be
    on another origin of this machine (an MCP gateway beside the model's)."""
    host = settings.target.host
    input_checks.on_target("--mcp-url", settings.agent.mcp_url, host)
    loop = settings.agent.workload.tool_loop
    if loop is not None:
        input_checks.on_loopback_or_target("workload [tools] mcp", loop.tools.mcp_url, host)


def refuse_unfit_driver(settings: KitSettings) -> None:
    """A profile's own driver (capacity, churn) refuses, before any load, a run it cannot carry out."""
    driver = settings.built_profile.driver
    if driver:
        kit_starts_target = bool(settings.target.target_cmd) or not settings.target.host
        driver_class = cast("type[SerialDriver]", presets.resolve_class(driver))  # profiles name serial ones
        driver_class.refuse_unfit(settings.agent, settings.preset, kit_starts_target)


def options_of(environment: Any) -> Any:
    """Locust's parsed options (the `locust` command always parses them before `init`)."""
    if environment.parsed_options is None:
        raise RuntimeError("the kit runs under the `locust` command, which parses its options")
    return environment.parsed_options


def refresh(settings: KitSettings, options: Any) -> KitSettings:
    """The settings again after the web UI form changed options: profile, thresholds and agents."""
    fixed = (settings.run_id, settings.run_dir, settings.target.host_auth)  # not on the form
    return dataclasses.replace(settings, **_form_part(options, settings.preset, *fixed))


def _form_part(
    options: Any, preset: presets.GatewayPreset, run_id: str, run_dir: Path, host_auth: HostCredentials | None
) -> dict[str, Any]:
    """The part of the settings the web UI form may change; the profile is built here, once."""
    workload = read_workload(options)
    profile = read_options(options)
    if workload.trace is not None:  # the trace's timestamps pace the run (scenarios/trace_replay.py)
        offsets = tuple(entry.offset_s for entry in workload.trace.entries)
        profile = dataclasses.replace(profile, trace_offsets_s=offsets, trace_speed=workload.trace.speed)
    name = profile_name(options, traced=workload.trace is not None)
    built = registry.build_profile(name, profile)
    _check_text_memory(workload, built.peak_users())
    agent = agent_settings(
        options, preset, profile, run_id=run_id, run_dir=run_dir, workload=workload, host_auth=host_auth
    )
    thresholds, slos = tuple(registry.build_thresholds(profile)), tuple(registry.build_slos(profile))
    check_goodput_thresholds(thresholds, slos)
    return {
        "profile_name": name,
        "profile": profile,
        "built_profile": built,
        "thresholds": thresholds,
        "slos": slos,
        "agent": agent,
    }


def profile_name(options: Any, traced: bool = False) -> str:
    """--load-profile; else the trace replay when the workload has a trace; else Locust's own --profile
    label when it names one of ours; else Locust's -u/-r/-t (the web UI form sets them) drive the
    manual profile; else a bounded smoke run."""
    given = _given(options, "load_profile")
    if traced and given not in (None, "trace"):
        raise InputError(
            f"--trace replays the trace's own timing: it runs as --load-profile trace, not {given}"
        )
    if given:
        return options.load_profile
    if traced:
        return "trace"
    label = _given(options, "profile")
    if label in registry.PROFILE_NAMES:
        return label
    if _given(options, "num_users") or _given(options, "run_time"):
        return "manual"
    return "smoke"


def agent_settings(
    options: Any, preset: presets.GatewayPreset, profile: ProfileOptions, **fixed: Any
) -> AgentSettings:
    """The agents' settings, field by field from the option of its dest (agent_options): the option when
    given, else the preset's default, else AgentSettings'; a given value through its declared conversion."""
    values: dict[str, Any] = {}
    for dest, action in agent_options(kit_parser()._actions).items():
        value = _given(options, dest)
        if value is None:
            value = preset.defaults.get(dest)
        convert = getattr(action, "convert", None)
        if value is not None:
            values[dest] = convert(value, flag_of(action)) if convert else value
    agent = AgentSettings(**values, capacity=profile.capacity, churn=profile.churn, **fixed)
    if agent.sessions is not None:
        chosen = select_sessions(agent.sessions, agent.sessions_select, agent.sessions_skip)
        header = "user" if preset.stored_history and _given(options, "session_header") is None else None
        # a stored-history gateway's header replays its stored history: the body's `user` only
        agent = dataclasses.replace(agent, sessions=chosen, session_header=header or agent.session_header)
    _check_max_tokens(options, agent.workload)
    _check_live_tools(agent)
    return agent


def agent_options(actions: Iterable[argparse.Action]) -> dict[str, argparse.Action]:
    """AgentSettings field -> the option of its dest, for every field the run does not set (SET_BY_RUN);
    one line naming a field no option fills, or an agents' option (agents/options.py) no field takes."""
    fields = {spec.name for spec in dataclasses.fields(AgentSettings)} - SET_BY_RUN
    found = {action.dest: action for action in actions if action.dest in fields and action.option_strings}
    problems = [
        f"AgentSettings.{name}: no option fills it, nor the run" for name in sorted(fields - found.keys())
    ]
    problems += [
        f"{flag_of(action)}: an agent option whose dest {action.dest!r} is no AgentSettings field"
        for action in declared_agent_options()
        if action.dest not in fields | SET_BY_RUN
    ]
    if problems:
        raise RuntimeError("; ".join(problems))
    return found


def _check_max_tokens(options: Any, workload: WorkloadSettings | None) -> None:
    """--output-tokens sets max_tokens per request: with --max-tokens too, one of them would be ignored;
    --max-tokens within the output ceiling."""
    given = _given(options, "max_tokens")
    if workload is not None and workload.output is not None and given is not None:
        raise InputError("--max-tokens and --output-tokens both set max_tokens: give one (--output-tokens N)")
    if given is not None:
        ceilings.check_tokens(int(given), "--max-tokens", "an output", ceilings.MAX_OUTPUT_TOKENS)


def _check_live_tools(agent: AgentSettings) -> None:
    """--live-tools answers a replay's tool calls with the workload's tools: it needs both; the session
    choices need a session file."""
    if (agent.sessions_select or agent.sessions_skip) and agent.sessions is None:
        raise InputError(
            "--sessions-select/--sessions-skip choose among a file's sessions: add --sessions FILE"
        )
    if not agent.live_tools:
        return
    if agent.sessions is None:
        raise InputError("--live-tools answers a replay's tool calls: add --sessions FILE")
    if agent.workload.tool_loop is None:
        raise InputError(
            "--live-tools answers the gateway's tool calls with the workload's tools: add --workload FILE "
            "with a [tools] section (drawn tools, or mcp = URL; examples/workloads/agent-loop.toml)"
        )


def _check_text_memory(workload: WorkloadSettings, agents: int) -> None:
    """The prompt text of the profile's peak agents fits in this machine's memory (scenarios/ceilings.py)."""
    largest = workload.largest_prompt_tokens()
    if largest:
        where = "--trace input_length" if workload.trace is not None else "--input-tokens (or [input])"
        ceilings.check_memory(largest, agents, _machine_bytes(), where)


def _machine_bytes() -> int:
    """This machine's physical memory."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _target(options: Any, preset: presets.GatewayPreset) -> TargetSettings:
    health = getattr(options, "health_path", None)  # "" on the command line: no health check
    host, host_auth = input_checks.host(_given(options, "host"))
    return TargetSettings(
        host=host,
        host_auth=host_auth,
        host_check=options.host_check,
        sim_args=input_checks.command("--sim-args", _given(options, "sim_args")) or "",
        target_cmd=input_checks.command("--target-cmd", _given(options, "target_cmd")),
        health_path=input_checks.health_path(preset.health_path if health is None else health),
        start_timeout=options.start_timeout,
        liveness_timeout=options.liveness_timeout,
        sample_interval=options.sample_interval,
        trend_min_duration=options.trend_min_duration,
        pss_every=options.pss_every,
        queue_url=_given(options, "queue_url"),
        queue_field=_given(options, "queue_field"),
        inflight_field=_given(options, "inflight_field"),
        model_calls_url=input_checks.model_calls_url(_given(options, "model_calls_url"), host),
    )


def _given(options: Any, name: str) -> Any:
    """An option's value, or None when absent or empty (the web UI form sends "" for a cleared field)."""
    value = getattr(options, name, None)
    return None if value == "" else value
