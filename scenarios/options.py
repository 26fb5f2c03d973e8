"""The kit's load-profile and threshold options: registered on Locust's parser, read into one record.

Options arrive as strings (command line, config file or the web UI form); this module only converts
them and says which one is malformed. It builds no profile and judges nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.cli import add
from contract.units import parse_duration, positive_number, whole_number
from scenarios import capacity, churn, fit
from scenarios.arrival_process import PROCESSES, ArrivalProcess
from scenarios.capacity import CapacityParams
from scenarios.churn import ChurnParams
from scenarios.errors import ProfileConfigError
from scenarios.fit import FitLimits

MAX_USERS = 10_000  # per load-generator process
LIST_SEPARATOR = ";"  # between the values of a list option (--threshold, --slo) in one web UI field
# (flag, help) of the profile's parameters, in the start form's profile group. All are strings defaulting
# to None so the web UI shows a text field and passes text.
_TEXT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--peak-users", "users at the plateau (smoke/average/stress/soak) or breakpoint's cap"),
    ("--base-users", "spike: users before and after the spike"),
    ("--spike-users", "spike: users at the top of the spike"),
    ("--ramp", "ramp time (average/stress/soak ramp up and down; spike: jump time), e.g. 30s"),
    ("--hold", "time at the plateau (or at the top of a spike; sweep: each pass, default 30s), e.g. 10m"),
    ("--settle", "spike: time at base load before and after the spike, e.g. 30s"),
    ("--step-users", "breakpoint: users added per step"),
    ("--step-every", "breakpoint: time between steps, e.g. 10s; fit: the least hold of a step (default 10s)"),
    ("--stages", "explicit stage list DURATION:USERS,..., e.g. 30s:10,1m:10,10s:0 (overrides the shape)"),
    ("--duration", "length of the loaded part of the run, e.g. 5m, 1h"),
    ("--baseline", "idle time with no load before the first stage or round, e.g. 10s"),
    ("--rounds", "rounds: concurrency levels, e.g. 6,8,10"),
    ("--round-hold", "rounds: longest a round waits for its tasks, e.g. 5m (default: until they finish)"),
    ("--arrival-rate", "open model: peak arrivals per second, following the profile's shape"),
    (
        "--max-agents",
        "open model: agents serving arrivals (default: profile peak); sweep: its pool (32); fit: the cap "
        "(200)",
    ),
    (
        "--burstiness",
        "open model: gamma arrivals' shape, 1 = Poisson, < 1 burstier (implies --arrivals gamma)",
    ),
    ("--arrival-seed", "open model: seed of the Poisson/gamma arrivals (default 0: every run the same)"),
    ("--sweep-rates", "sweep: rates between the synchronous and the throughput pass (default 8)"),
)


@dataclass(frozen=True)
class ProfileOptions:
    """The kit's options, typed; None means "not given, use the profile's default"."""

    profile: str = "manual"
    peak_users: int | None = None
    base_users: int | None = None
    spike_users: int | None = None
    ramp_s: float | None = None
    hold_s: float | None = None
    settle_s: float | None = None
    step_users: int | None = None
    step_every_s: float | None = None
    stages: str | None = None
    duration_s: float | None = None
    baseline_s: float | None = None
    rounds: tuple[int, ...] | None = None
    round_hold_s: float | None = None
    arrival_rate: float | None = None
    max_agents: int | None = None
    arrival_process: ArrivalProcess = field(default_factory=ArrivalProcess)
    arrivals_given: bool = False  # --arrivals or --burstiness given (warned about when nothing reads them)
    sweep_rates: int | None = None
    thresholds_file: str | None = None
    threshold_exprs: tuple[str, ...] = field(default_factory=tuple)
    allow_unjudged: bool = False  # a threshold left without a verdict does not fail the run (exit 8)
    slo_exprs: tuple[str, ...] = field(default_factory=tuple)
    num_users: int | None = None  # Locust's -u, -r, -t: read by the manual profile
    spawn_rate: float | None = None
    run_time_s: float | None = None
    capacity: CapacityParams = field(default_factory=CapacityParams)
    churn: ChurnParams = field(default_factory=ChurnParams)
    fit: FitLimits = field(default_factory=FitLimits)
    trace_offsets_s: tuple[float, ...] | None = None  # the workload's trace (scenarios/workloads/settings.py)
    trace_speed: float = 1.0


def add_arguments(parser: Any, profile_names: Sequence[str]) -> None:
    """Register the options on Locust's parser (pass it from events.init_command_line_parser)."""
    add(
        parser,
        "--load-profile",
        form_group="profile",
        choices=list(profile_names),
        default=None,
        help="load profile; default: smoke when headless without -u/-t, else manual (follows -u/-r/-t)",
    )
    for flag, text in _TEXT_OPTIONS:
        add(parser, flag, form_group="profile", type=str, default=None, help=text)
    add(
        parser,
        "--thresholds",
        form_group="thresholds",
        type=str,
        default=None,
        help="TOML file of thresholds (NFRs), see examples/thresholds.toml",
    )
    add(
        parser,
        "--arrivals",
        form_group="profile",
        choices=list(PROCESSES),
        default=None,
        help="open model: arrival process, constant (default), poisson or gamma (see --burstiness)",
    )
    add(
        parser,
        "--threshold",
        form_group="thresholds",
        action="append",
        default=None,
        help='a threshold, repeatable, e.g. "ttft_ms p95 < 500 abort grace=10s" (";" separates in the UI)',
    )
    add(
        parser,
        "--allow-unjudged",
        form_group="profile",
        action="store_true",
        default=False,
        help="a threshold with no data to judge it does not fail the run (default: exit code 8)",
    )
    add(
        parser,
        "--slo",
        form_group="thresholds",
        action="append",
        default=None,
        help="a service level a request or task must meet to count in goodput, repeatable, e.g. "
        '"ttft_ms <= 500", "tpot_ms p95 <= 50", "task_total_ms <= 5m" (";" separates in the UI)',
    )


def read_options(ns: argparse.Namespace | Any) -> ProfileOptions:
    """Convert the parsed (string) options; raises ProfileConfigError naming the bad option. An empty
    value (the web UI form sends "" for a cleared field) means "not given"."""
    get = _getter(ns)
    max_agents = _convert(get, "max_agents", _positive_int)
    return ProfileOptions(
        profile=get("load_profile") or "manual",
        peak_users=_convert(get, "peak_users", _positive_int),
        base_users=_convert(get, "base_users", _whole),
        spike_users=_convert(get, "spike_users", _positive_int),
        ramp_s=_convert(get, "ramp", parse_duration),
        hold_s=_convert(get, "hold", parse_duration),
        settle_s=_convert(get, "settle", parse_duration),
        step_users=_convert(get, "step_users", _positive_int),
        step_every_s=_convert(get, "step_every", _positive_duration),
        stages=get("stages") or None,
        duration_s=_convert(get, "duration", _positive_duration),
        baseline_s=_convert(get, "baseline", parse_duration),
        rounds=_convert(get, "rounds", _levels),
        round_hold_s=_convert(get, "round_hold", _positive_duration),
        arrival_rate=_convert(get, "arrival_rate", positive_number),
        max_agents=max_agents,
        arrival_process=_arrival_process(get),
        arrivals_given=get("arrivals") is not None or get("burstiness") is not None,
        sweep_rates=_convert(get, "sweep_rates", _positive_int),
        thresholds_file=get("thresholds") or None,
        threshold_exprs=_threshold_list(get("threshold"), "--threshold"),
        allow_unjudged=get("allow_unjudged") in (True, "true", "on", "1"),
        slo_exprs=_threshold_list(get("slo"), "--slo"),
        num_users=_convert(get, "num_users", _positive_int, "-u/--users"),
        spawn_rate=_convert(get, "spawn_rate", positive_number, "-r/--spawn-rate"),
        run_time_s=_convert(get, "run_time", parse_duration, "-t/--run-time"),
        capacity=capacity.read_params(ns, max_agents),
        churn=churn.read_params(ns),
        fit=fit.read_limits(ns),
    )


def _getter(ns: Any) -> Callable[[str], Any]:
    def get(name: str) -> Any:
        value = getattr(ns, name, None)
        return None if value == "" else value

    return get


def _convert(
    get: Callable[[str], Any], dest: str, parse: Callable[[str], Any], flag: str | None = None
) -> Any:
    raw = get(dest)
    if raw is None:
        return None
    try:
        return parse(str(raw).strip())
    except ValueError as e:
        raise ProfileConfigError(f"{flag or '--' + dest.replace('_', '-')} {raw!r}: {e}") from None


def _arrival_process(get: Callable[[str], Any]) -> ArrivalProcess:
    """--arrivals, --burstiness, --arrival-seed; --burstiness alone means gamma arrivals."""
    burstiness = _convert(get, "burstiness", positive_number)
    kind = get("arrivals") or ("gamma" if burstiness is not None else "constant")
    if burstiness is not None and kind != "gamma":
        raise ProfileConfigError(f"--burstiness applies to --arrivals gamma, not --arrivals {kind}")
    seed = _convert(get, "arrival_seed", _whole_seed)
    return ArrivalProcess(kind, 1.0 if burstiness is None else burstiness, seed or 0)


def _whole_seed(text: str) -> int:
    return whole_number(text)


def _threshold_list(raw: Any, flag: str) -> tuple[str, ...]:
    """--threshold and --slo are lists on the command line and one LIST_SEPARATOR-separated string from
    the web UI (whose empty field means none); an empty one on the command line (`--slo ''`) is refused,
    not ignored."""
    if not isinstance(raw, str) and any(not str(item).strip() for item in raw or []):
        raise ProfileConfigError(f"{flag} '': empty; give an expression, e.g. {flag} \"ttft_ms <= 500\"")
    items = [raw] if isinstance(raw, str) else list(raw or [])
    return tuple(part.strip() for item in items for part in item.split(LIST_SEPARATOR) if part.strip())


def _whole(text: str, least: int = 0) -> int:
    """A user count: a whole number, at most MAX_USERS (every user costs memory in this process)."""
    return check_users(whole_number(text, least))


def check_users(users: int) -> int:
    """The user cap (a profile's peak, a count given, EDIT in the web UI): ValueError above MAX_USERS."""
    if users > MAX_USERS:
        raise ValueError(
            f"{users} users: more than {MAX_USERS} in one load generator (each holds a greenlet and an "
            "HTTP client in memory); split the load over Locust workers (--processes)"
        )
    return users


def _positive_int(text: str) -> int:
    return _whole(text, least=1)


def _positive_duration(text: str) -> float:
    value = parse_duration(text)
    if value <= 0:
        raise ValueError("must be longer than 0s")
    return value


def _levels(text: str) -> tuple[int, ...]:
    return tuple(_positive_int(part.strip()) for part in text.split(","))
