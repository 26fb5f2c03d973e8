"""The one place that maps a profile name to its builder: what --load-profile offers and builds.

build_profile() and build_thresholds() run before any load and raise one-line config errors;
they never start, sleep or stop anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios import (
    average,
    breakpoint,
    capacity,
    churn,
    fit,
    manual,
    rounds,
    smoke,
    soak,
    spike,
    stress,
    sweep,
    trace_replay,
)
from scenarios.errors import ProfileConfigError, ThresholdConfigError
from scenarios.open_model import OpenModelProfile
from scenarios.options import ProfileOptions, check_users, read_options
from scenarios.options import add_arguments as _add_arguments
from scenarios.profile import Profile
from scenarios.shape import StagedProfile
from scenarios.slo import Slo, parse_slo
from scenarios.thresholds import MAX_THRESHOLDS, Threshold, load_thresholds_file, parse_threshold

BUILDERS: dict[str, Callable[[ProfileOptions], Profile]] = {
    "manual": manual.build,
    "smoke": smoke.build,
    "average": average.build,
    "stress": stress.build,
    "spike": spike.build,
    "breakpoint": breakpoint.build,
    "soak": soak.build,
    "rounds": rounds.build,
    "sweep": sweep.build,
    "capacity": lambda opts: capacity.build(opts.capacity),
    "churn": lambda opts: churn.build(opts.churn, opts.capacity.memory_budget_bytes),
    "trace": trace_replay.build,
    "fit": lambda opts: fit.build(
        opts.fit,
        fit.SharedOptions(opts.step_every_s, opts.max_agents, opts.baseline_s, opts.slo_exprs, opts.stages),
    ),
}
PROFILE_NAMES: tuple[str, ...] = tuple(BUILDERS)
_PLATEAU = frozenset({"peak_users", "ramp_s", "hold_s", "duration_s", "baseline_s", "stages"})
# The shape options (ProfileOptions fields) each profile reads; any other one given is ignored by it.
READS: dict[str, frozenset[str]] = {
    "manual": frozenset({"num_users", "spawn_rate", "run_time_s"}),
    "smoke": frozenset({"peak_users", "duration_s", "baseline_s", "stages"}),
    "average": _PLATEAU,
    "stress": _PLATEAU,
    "soak": _PLATEAU,
    "spike": frozenset({"base_users", "spike_users", "ramp_s", "hold_s", "settle_s", "baseline_s", "stages"}),
    "breakpoint": frozenset({"peak_users", "step_users", "step_every_s", "baseline_s", "stages"}),
    "rounds": frozenset({"rounds", "round_hold_s", "baseline_s", "stages"}),
    "sweep": frozenset({"sweep_rates", "hold_s", "max_agents", "baseline_s"}),
    "capacity": frozenset({"max_agents"}),
    "churn": frozenset(),
    "trace": frozenset({"max_agents"}),
    "fit": frozenset({"step_every_s", "max_agents", "baseline_s"}),
}
_SHAPE_OPTIONS = frozenset().union(*READS.values())
_FLAGS = {"num_users": "-u", "spawn_rate": "-r", "run_time_s": "-t"}
ARRIVAL_PROFILES = frozenset({"sweep"})  # profiles that pace arrivals without --arrival-rate


def add_arguments(parser: Any) -> None:
    """Register every kit profile/threshold option; call from events.init_command_line_parser."""
    _add_arguments(parser, PROFILE_NAMES)
    capacity.add_arguments(parser)
    churn.add_arguments(parser)
    fit.add_arguments(parser)


def build_profile(name: str | None, options: Any) -> Profile:
    """The profile `name` (default: --load-profile) configured from parsed options or ProfileOptions."""
    opts = options if isinstance(options, ProfileOptions) else read_options(options)
    name = name or opts.profile
    if name not in BUILDERS:
        raise ProfileConfigError(f"unknown profile {name!r}: choose one of {', '.join(PROFILE_NAMES)}")
    profile = BUILDERS[name](opts)
    if opts.arrival_rate is not None:
        if not isinstance(profile, StagedProfile):
            raise ProfileConfigError(f"--arrival-rate does not apply to --load-profile {name}")
        profile = OpenModelProfile(profile, opts.arrival_rate, opts.max_agents, opts.arrival_process)
    return capped(profile)


def capped(profile: Profile) -> Profile:
    """The user cap every profile passes, whatever shapes it (stages, rounds, a spike, a pool)."""
    try:
        check_users(profile.peak_users())
    except ValueError as exc:
        raise ProfileConfigError(f"--load-profile {profile.name}: {exc}") from None
    return profile


def build_thresholds(options: Any) -> list[Threshold]:
    """Thresholds from --thresholds FILE then each --threshold, all validated before load starts."""
    opts = options if isinstance(options, ProfileOptions) else read_options(options)
    found = load_thresholds_file(opts.thresholds_file) if opts.thresholds_file else []
    found += [parse_threshold(e, f"--threshold #{i}") for i, e in enumerate(opts.threshold_exprs, 1)]
    if len(found) > MAX_THRESHOLDS:
        raise ThresholdConfigError(
            f"{len(found)} thresholds: at most {MAX_THRESHOLDS} per run (each is judged every second)"
        )
    return found


def build_slos(options: Any) -> list[Slo]:
    """Service levels from each --slo, validated before load starts."""
    opts = options if isinstance(options, ProfileOptions) else read_options(options)
    return [parse_slo(e, f"--slo #{i}") for i, e in enumerate(opts.slo_exprs, 1)]


def ignored_options(name: str, opts: ProfileOptions) -> list[str]:
    """The flags given that profile `name` does not read (the open model reads --max-agents and the
    arrival process)."""
    reads = READS[name] | ({"max_agents"} if opts.arrival_rate is not None else set())
    given = sorted(f for f in _SHAPE_OPTIONS - reads if getattr(opts, f) is not None)
    flags = [_FLAGS.get(f) or "--" + f.removesuffix("_s").replace("_", "-") for f in given]
    paced = opts.arrival_rate is not None or name in ARRIVAL_PROFILES
    return flags + (["--arrivals/--burstiness"] if opts.arrivals_given and not paced else [])
