"""The in-memory shape of a run directory that every analysis function takes, and of a report section.

Loading (analysis/load.py) fills RunData; table functions read it and return DataFrames; report
sections are built from those. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


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
    missing: list[str] = field(default_factory=list)  # one human sentence per missing/damaged file


@dataclass
class Section:
    """A titled part of the report: tables, notes (sample-size warnings, verdict rules), images."""

    title: str
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
