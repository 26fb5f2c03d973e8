"""Churn profile: sessions opened, prompted once and closed, in cycles, to find memory never returned.

A profile object only (options, validation, one driver user); the driver in agents/capacity/drivers.py does
the cycles and reads memory; analysis/capacity.py judges retention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.cli import add
from scenarios.capacity import SerialProfile, metric, whole

DEFAULT_CYCLES = 10
DEFAULT_BATCH = 5


@dataclass(frozen=True)
class ChurnParams:
    """The churn options, typed; the defaults are the options' documented defaults."""

    churn_cycles: int = DEFAULT_CYCLES
    churn_batch: int = DEFAULT_BATCH
    capacity_metric: str = "rss"


def add_arguments(parser: Any) -> None:
    """--churn-cycles and --churn-batch (the memory metric is capacity's --capacity-metric)."""
    group = parser.add_argument_group("loadkit: churn", "open, prompt, close in cycles (leak per session)")
    add(
        group,
        "--churn-cycles",
        form_group="profile",
        default=str(DEFAULT_CYCLES),
        help="churn: cycles of open-prompt-close (default 10)",
    )
    add(
        group,
        "--churn-batch",
        form_group="profile",
        default=str(DEFAULT_BATCH),
        help="churn: sessions opened and closed per cycle (default 5)",
    )


def read_params(options: Any) -> ChurnParams:
    return ChurnParams(
        churn_cycles=whole(options, "churn_cycles", DEFAULT_CYCLES),
        churn_batch=whole(options, "churn_batch", DEFAULT_BATCH),
        capacity_metric=metric(options),
    )


def build(params: ChurnParams, memory_budget_bytes: float) -> SerialProfile:
    """The churn profile; it stops at capacity's --memory-budget too."""
    return SerialProfile("churn", params, "agents.capacity.drivers:ChurnAgent", memory_budget_bytes)
