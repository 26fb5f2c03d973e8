"""The one place that maps a profile name to its builder: what --load-profile offers and builds.

build_profile() and build_thresholds() run before any load and raise one-line config errors;
they never start, sleep or stop anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios import average, breakpoint, capacity, churn, manual, rounds, smoke, soak, spike, stress
from scenarios.errors import ProfileConfigError
from scenarios.open_model import OpenModelProfile
from scenarios.options import ProfileOptions, read_options
from scenarios.options import add_arguments as _add_arguments
from scenarios.profile import Profile
from scenarios.shape import StagedProfile
from scenarios.thresholds import Threshold, load_thresholds_file, parse_threshold

BUILDERS: dict[str, Callable[[ProfileOptions], Profile]] = {
    "manual": manual.build,
    "smoke": smoke.build,
    "average": average.build,
    "stress": stress.build,
    "spike": spike.build,
    "breakpoint": breakpoint.build,
    "soak": soak.build,
    "rounds": rounds.build,
    "capacity": lambda opts: capacity.build(opts.capacity),
    "churn": lambda opts: churn.build(opts.churn),
}
PROFILE_NAMES: tuple[str, ...] = tuple(BUILDERS)


def add_arguments(parser: Any) -> None:
    """Register every kit profile/threshold option; call from events.init_command_line_parser."""
    _add_arguments(parser, PROFILE_NAMES)
    capacity.add_arguments(parser)
    churn.add_arguments(parser)


def build_profile(name: str | None, options: Any) -> Profile:
    """The profile `name` (default: --load-profile) configured from parsed options or ProfileOptions."""
    opts = options if isinstance(options, ProfileOptions) else read_options(options)
    name = name or opts.profile
    if name not in BUILDERS:
        raise ProfileConfigError(f"unknown profile {name!r}: choose one of {', '.join(PROFILE_NAMES)}")
    profile = BUILDERS[name](opts)
    if opts.arrival_rate is None:
        return profile
    if not isinstance(profile, StagedProfile):
        raise ProfileConfigError(f"--arrival-rate does not apply to --load-profile {name}")
    return OpenModelProfile(profile, opts.arrival_rate, opts.max_agents)


def build_thresholds(options: Any) -> list[Threshold]:
    """Thresholds from --thresholds FILE then each --threshold, all validated before load starts."""
    opts = options if isinstance(options, ProfileOptions) else read_options(options)
    found = load_thresholds_file(opts.thresholds_file) if opts.thresholds_file else []
    found += [parse_threshold(e, f"--threshold #{i}") for i, e in enumerate(opts.threshold_exprs, 1)]
    return found
