"""The in-memory shape of a run directory that every analysis function takes, and of a report section;
and `per_run`, which keeps a table function's answer with the run it was computed from.

Loading (analysis/load.py) fills RunData; table functions read it and return DataFrames; report
sections are built from those. No I/O here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import pandas as pd

_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass
class RunData:
    """One run directory, loaded. A frame is None when its file is absent; `missing` says why."""

    path: Path
    meta: dict  # run.json ({} when absent or unreadable)
    samples: pd.DataFrame | None = None
    requests: pd.DataFrame | None = None
    tasks: pd.DataFrame | None = None
    agents: pd.DataFrame | None = None
    capacity: pd.DataFrame | None = None
    users: pd.DataFrame | None = None  # users.csv: running agents and profile phase, once a tick
    model_calls: pd.DataFrame | None = None  # model_calls.csv: the calls the model answered, read at it
    loop_lag: pd.DataFrame | None = None  # loop_lag.csv: the load generator's event-loop lag probe
    processes: pd.DataFrame | None = None  # processes.csv: what the sampler counted (read with the next)
    process_readings: pd.DataFrame | None = None  # process_readings.csv: each target process per reading
    missing: list[str] = field(default_factory=list)  # one human sentence per missing/damaged file
    derived: dict = field(default_factory=dict, repr=False, compare=False)  # per_run's answers


def per_run(func: Callable[Concatenate[RunData, _P], _R]) -> Callable[Concatenate[RunData, _P], _R]:
    """Computed once per loaded run: the report's sections, summary.json and the console summary ask for
    the same tables (a headline, the latency table, the load levels, the capacity fit), which cost
    seconds on a day's soak. The answer is shared: callers must not change it. An argument that cannot be
    hashed (a price table) is told apart by its identity, and kept with the answer so that it stays."""

    @functools.wraps(func)
    def once(run: RunData, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        given = (*args, *sorted(kwargs.items()))
        key = (func.__module__, func.__qualname__, *(_identity(a) for a in given))
        if key not in run.derived:
            run.derived[key] = (given, func(run, *args, **kwargs))
        return run.derived[key][1]

    return once


def _identity(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


@dataclass
class Section:
    """A titled part of the report: tables, notes (sample-size warnings, verdict rules), images."""

    title: str
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
