"""Locust's parsed options (command line, LOCUST_*, locust.conf, the web UI form) converted ONCE into the
run's frozen, typed, validated settings, and the agents' share handed down to them.

Called at init, and again when the web UI starts a test (its form may have changed the options): an
empty form field means "not given", so the documented default. Raises InputError with one line; it
starts, creates and sends nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agents import presets
from agents.capacity.drivers import SerialDriver
from agents.loop.session_policy import renew_every
from agents.settings import DEFAULTS, AgentSettings
from agents.wire.target_origin import HostCredentials
from analysis.prices import load_prices
from contract.cli import positive_duration
from contract.errors import InputError
from contract.units import parse_size, positive_number, whole_number
from kit import input_checks
from scenarios import ceilings, registry
from scenarios.options import ProfileOptions, read_options
from scenarios.profile import Profile
from scenarios.slo import Slo, check_goodput_thresholds
from scenarios.thresholds import Threshold
from scenarios.workloads.session_file import load_sessions, select_sessions
from scenarios.workloads.settings import WorkloadSettings, read_workload

RUNS_ROOT = Path("runs")
# Agent options that must be finite and > 0 (the web form bypasses argparse's `type=` checks): times
# take what every duration option takes ("30s", "15m", or plain seconds), counts a whole number.
_DURATIONS = ("request_timeout", "poll_interval", "task_timeout", "mcp_close_timeout")
_POSITIVE = ("max_tokens", "sessions_speed")
# Agent options a preset may default: its attribute (or its `defaults` entry) fills an unset option.
_PRESET_ATTRIBUTES = ("session_header", "api_key_env")
_SIZES = ("max_response_bytes", "max_sse_line_bytes")  # sizes as users type them: 64MiB, 1MiB, bytes
_COMMANDS = ("acp_command", "hermes_command", "mcp_command")  # command lines given as one string
_SEQUENCES = ("target_pid", "target_match", "target_cgroup", "sidecar_pid", "sidecar_match", "sampler_url")


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
        _given(options, "run_id"), Path(given_dir) if given_dir else None, _given(options, "html_file")
    )
    run_dir = named.run_dir or RUNS_ROOT / run_id
    prices = _given(options, "prices")
    if prices:
        load_prices(prices)  # a bad table fails now, not at the report
    key_env = _given(options, "api_key_env") or preset.api_key_env
    input_checks.headers(key_env, _given(options, "session_header") or preset.session_header)
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
    """The agents' settings: the option when given, else the preset's default, else AgentSettings'."""
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(AgentSettings):
        value = _given(options, spec.name)
        if value is None and spec.name in _PRESET_ATTRIBUTES:
            value = getattr(preset, spec.name)
        if value is None:
            value = preset.defaults.get(spec.name)
        if value is not None:
            values[spec.name] = value
    for name in _SEQUENCES:
        values[name] = tuple(values.get(name) or ())
    for name in _DURATIONS:
        values[name] = _duration(name, values.get(name, getattr(DEFAULTS, name)))
    for name in _POSITIVE:
        values[name] = _positive(name, values.get(name, getattr(DEFAULTS, name)))
    for name in _SIZES:
        values[name] = _size(name, values.get(name, getattr(DEFAULTS, name)))
    values["langgraph_input"] = _json_object("langgraph_input", values.get("langgraph_input"))
    values["sessions_select"], values["sessions_skip"] = _names(values, "sessions_select", "sessions_skip")
    if values.get("sessions") is not None:
        chosen = (values["sessions_select"], values["sessions_skip"])
        values["sessions"] = select_sessions(load_sessions(str(values["sessions"])), *chosen)
        if preset.stored_history and _given(options, "session_header") is None:
            values["session_header"] = "user"  # the body's `user` only: the recording's history is replayed
    _check_session_policy(values.get("session_policy", DEFAULTS.session_policy))
    for name in _COMMANDS:
        input_checks.command("--" + name.replace("_", "-"), values.get(name))
    values.update(capacity=profile.capacity, churn=profile.churn, **fixed)
    _check_max_tokens(options, values.get("workload"))
    _check_live_tools(values)
    return AgentSettings(**values)


def _names(values: dict[str, Any], *names: str) -> list[tuple[str, ...]]:
    """Comma-separated options (ID[,ID]) as tuples of their non-empty items."""
    return [tuple(i.strip() for i in str(values.get(n) or "").split(",") if i.strip()) for n in names]


def _check_max_tokens(options: Any, workload: WorkloadSettings | None) -> None:
    """--output-tokens sets max_tokens per request: with --max-tokens too, one of them would be ignored;
    --max-tokens within the output ceiling."""
    given = _given(options, "max_tokens")
    if workload is not None and workload.output is not None and given is not None:
        raise InputError("--max-tokens and --output-tokens both set max_tokens: give one (--output-tokens N)")
    if given is not None:
        ceilings.check_tokens(int(given), "--max-tokens", "an output", ceilings.MAX_OUTPUT_TOKENS)


def _check_live_tools(values: dict[str, Any]) -> None:
    """--live-tools answers a replay's tool calls with the workload's tools: it needs both; the session
    choices need a session file."""
    chose = values.get("sessions_select") or values.get("sessions_skip")
    if chose and values.get("sessions") is None:
        raise InputError(
            "--sessions-select/--sessions-skip choose among a file's sessions: add --sessions FILE"
        )
    if not values.get("live_tools"):
        return
    if values.get("sessions") is None:
        raise InputError("--live-tools answers a replay's tool calls: add --sessions FILE")
    workload = values.get("workload")
    if workload is None or workload.tool_loop is None:
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


def _check_session_policy(policy: str) -> None:
    """The web form bypasses argparse's type check: the same rule here."""
    try:
        renew_every(str(policy))
    except ValueError as exc:
        raise InputError(str(exc)) from None


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


def _positive(name: str, value: Any) -> int | float:
    """A number option that must be finite and > 0, keeping its type (int stays int)."""
    whole = isinstance(getattr(DEFAULTS, name), int)
    try:
        return whole_number(value, least=1) if whole else positive_number(value)
    except ValueError as exc:
        raise InputError(f"--{name.replace('_', '-')} {value!r}: {exc}") from None


def _duration(name: str, value: Any) -> float:
    """A time option in seconds: "30s", "2m", "1h30m", "250ms" or a plain number of seconds, > 0."""
    try:
        return positive_duration(str(value))
    except argparse.ArgumentTypeError as exc:
        raise InputError(f"--{name.replace('_', '-')} {value!r}: {exc}") from None


def _size(name: str, value: Any) -> int:
    """A size option (64MiB, 1.5GB, bytes) as whole bytes >= 1."""
    flag = "--" + name.replace("_", "-")
    try:
        size = int(parse_size(str(value)))
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None
    if size < 1:
        raise InputError(f"{flag} {value!r}: expected a size of at least 1 byte")
    return size


def _json_object(name: str, text: str | None) -> dict[str, Any] | None:
    """An option holding a JSON object, parsed once; one line when it is not one."""
    if text is None:
        return None
    flag = "--" + name.replace("_", "-")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{flag}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InputError(f"{flag}: expected a JSON object, got {type(value).__name__}")
    return value
