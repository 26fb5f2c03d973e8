"""Capacity profile (the capacity study): one user that runs the serial protocol itself, not paced by ticks.

A profile object only: options, their validation (one-line errors) and a tick that holds one user of
the driver class. The driver ends the run when the protocol stops; this module measures nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.cli import add
from contract.schema import CAPACITY_AT_N
from contract.units import parse_size, whole_number
from scenarios.errors import ProfileConfigError
from scenarios.shape import Phase, Tick
from scenarios.traits import ProfileTraits

METRICS = ("rss", "pss")
CONNECTIONS = ("fresh", "keep-alive")
ACP_SESSIONS = ("process", "shared")
DEFAULT_BUDGET = "1GiB"


class SerialProfile(ProfileTraits):
    """One driver user from t = 0 until the driver stops the run (budget, cap, failure, cycles done),
    in one process (the driver reads the target after each step)."""

    one_process = True

    def __init__(self, name: str, params: Any, driver: str, memory_budget_bytes: float) -> None:
        self.name = name
        self.params = params
        self.driver = driver
        self.memory_budget_bytes = memory_budget_bytes

    def tick(self, t: float) -> Tick:
        return Tick(1, 1.0, self.name)

    def paced_by(self, start_ts: float) -> None:
        """The driver runs the protocol at the target's own pace."""

    def peak_users(self) -> int:
        return 1  # the driver (its agents are sessions, capped by --max-agents)

    def phases(self) -> list[Phase]:
        return [Phase(self.name, 0.0, None)]


@dataclass(frozen=True)
class CapacityParams:
    """The capacity options, typed; the defaults are the options' documented defaults."""

    memory_budget_bytes: float = parse_size(DEFAULT_BUDGET)
    max_agents: int | None = None
    capacity_metric: str = "rss"
    capacity_at_n: int = CAPACITY_AT_N


def add_arguments(parser: Any) -> None:
    """--memory-budget, --capacity-metric, --capacity-at-n (the cap is the shared --max-agents)."""
    group = parser.add_argument_group("loadkit: capacity", "serial idle-agent capacity (the capacity study)")
    add(
        group,
        "--memory-budget",
        form_group="profile",
        default=None,
        help="capacity/churn: stop when the target's memory reaches this, e.g. 1GiB, 512MiB (default 1GiB); "
        "fit: the target's steady RSS a step may not reach (default: none)",
    )
    add(
        group,
        "--capacity-metric",
        form_group="profile",
        choices=METRICS,
        default="rss",
        help="capacity/churn: memory judged against the budget: rss (summed RSS) or pss (for "
        "process-per-agent targets: shared pages counted once)",
    )
    add(
        group,
        "--capacity-at-n",
        form_group="profile",
        default=str(CAPACITY_AT_N),
        help="capacity: report the target's memory at this agent count (default 200)",
    )
    add(
        group,
        "--capacity-connection",
        form_group="profile",
        choices=CONNECTIONS,
        default="fresh",
        help="capacity/churn: time start-up on a fresh TCP connection per request (default; no "
        "delayed-ACK stall) or on a keep-alive one",
    )
    add(
        group,
        "--acp-sessions",
        form_group="profile",
        choices=ACP_SESSIONS,
        default="process",
        help="capacity/churn on ACP: one agent process per session (default) or sessions in one process",
    )


def read_params(options: Any, max_agents: int | None) -> CapacityParams:
    """The capacity options from Locust's parsed options (an empty web form field means the default);
    raises ProfileConfigError naming the bad one. The cap is the shared --max-agents, parsed once."""
    return CapacityParams(
        memory_budget_bytes=budget_bytes(options),
        max_agents=max_agents,
        capacity_metric=metric(options),
        capacity_at_n=whole(options, "capacity_at_n", CAPACITY_AT_N),
    )


def budget_bytes(options: Any) -> float:
    raw = getattr(options, "memory_budget", None) or DEFAULT_BUDGET
    try:
        value = parse_size(str(raw))
    except ValueError as e:
        raise ProfileConfigError(f"--memory-budget: {e}") from None
    if value <= 0:
        raise ProfileConfigError(f"--memory-budget {raw!r}: must be more than 0 bytes")
    return value


def metric(options: Any) -> str:
    value = getattr(options, "capacity_metric", None) or "rss"
    if value not in METRICS:
        raise ProfileConfigError(f"--capacity-metric {value!r}: choose one of {', '.join(METRICS)}")
    return value


def whole(options: Any, dest: str, default: int) -> int:
    """A positive whole-number option given as text (the web UI passes text)."""
    raw = getattr(options, dest, None)
    if raw in (None, ""):
        return default
    try:
        return whole_number(raw, least=1)
    except ValueError as exc:
        raise ProfileConfigError(f"--{dest.replace('_', '-')} {raw!r}: {exc}") from None


def build(params: CapacityParams) -> SerialProfile:
    """The capacity profile from its validated parameters."""
    return SerialProfile(
        "capacity", params, "agents.capacity.drivers:CapacityAgent", params.memory_budget_bytes
    )
