"""Target RSS against the number of agent sessions opened, for runs that open sessions under load.

Pure join (no fit): each agents.csv `created` event joined to the first sample at or after it. Capacity
runs have their own, exact readings and fitted plot (analysis/capacity.py, analysis/capacity_plot.py).
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData
from contract.schema import AGENT_EVENT, SAMPLE


def rss_by_agent_count(run: RunData) -> pd.DataFrame | None:
    """Columns n and target_rss_bytes, one row per agent count; None when the run created no agents, or
    for a capacity/churn run, whose exact per-step readings (capacity.png) this 1 Hz join would contradict."""
    if run.capacity is not None and not run.capacity.empty:
        return None
    agents, samples = run.agents, run.samples
    if agents is None or samples is None or agents.empty or samples.empty:
        return None
    created = agents[(agents["event"] == AGENT_EVENT.created) & agents["n"].notna()].sort_values("ts")
    readings = samples[["ts", SAMPLE.target_rss_bytes]].dropna().sort_values("ts")
    if created.empty or readings.empty:
        return None
    joined = pd.merge_asof(created[["ts", "n"]], readings, on="ts", direction="forward")
    return joined[["n", SAMPLE.target_rss_bytes]].dropna()
