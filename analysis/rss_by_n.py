"""Target RSS against the number of agents alive, for the RSS-vs-N plot of capacity runs.

Pure join (no fit: capacity math lives in analysis/capacity.py): capacity.csv when it carries `n` and
`target_rss_bytes`, else each agents.csv `created` event joined to the first sample at or after it.
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData


def rss_by_agent_count(run: RunData) -> pd.DataFrame | None:
    """Columns n and target_rss_bytes, one row per agent count; None when the run created no agents."""
    cap = run.capacity
    if cap is not None and {"n", "target_rss_bytes"} <= set(cap.columns):
        return cap[["n", "target_rss_bytes"]].dropna()
    agents, samples = run.agents, run.samples
    if agents is None or samples is None or agents.empty or samples.empty:
        return None
    created = agents[(agents["event"] == "created") & agents["n"].notna()].sort_values("ts")
    readings = samples[["ts", "target_rss_bytes"]].dropna().sort_values("ts")
    if created.empty or readings.empty:
        return None
    joined = pd.merge_asof(created[["ts", "n"]], readings, on="ts", direction="forward")
    return joined[["n", "target_rss_bytes"]].dropna()
