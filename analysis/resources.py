"""Resource table from samples.csv: target memory, host headroom against a warning line, swap, CPU.

Pure: a RunData in, a DataFrame out (memory in MiB, time in seconds). Unmeasured series are left out of
the table and named in its notes by the report, never shown as zero. Hosts are never mixed: rows from
several machines (sampler services) get a column each.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.hosts import by_host, judged_samples
from analysis.model import RunData
from analysis.stats import time_weighted_mean, time_where
from contract.schema import MIB, SAMPLE, WARNING_AVAILABLE_BYTES

DEFAULT_WARNING_BYTES = WARNING_AVAILABLE_BYTES


def resource_table(run: RunData, warning_bytes: float = DEFAULT_WARNING_BYTES) -> pd.DataFrame | None:
    """One row per measure: peak target RSS, min available memory, time below the line, swap, CPU; one
    column `value`, or one column per host when the rows come from several (samples.csv `host`)."""
    s = run.samples
    if s is None or s.empty:
        return None
    columns = {
        host: dict(memory_rows(rows, warning_bytes) + cpu_rows(rows)) for host, rows in by_host(s).items()
    }
    table = pd.DataFrame(columns).dropna(how="all")
    if table.empty:
        return None
    table.index.name = "measure"
    return table


def memory_rows(s: pd.DataFrame, warning_bytes: float) -> list[tuple[str, float]]:
    """Memory measures in MiB (swap growth is last minus first reading)."""
    avail = s[SAMPLE.host_available_bytes]
    swap = s[SAMPLE.host_swap_used_bytes].dropna()
    below = time_where(s["ts"], avail < warning_bytes) if avail.notna().any() else np.nan
    unread = target_unread(s)
    return [
        ("peak target RSS (MiB)", np.nan if unread else s[SAMPLE.target_rss_bytes].max() / MIB),
        ("peak target PSS (MiB)", np.nan if unread else s[SAMPLE.target_pss_bytes].max() / MIB),
        ("peak target processes", s[SAMPLE.target_procs].max()),
        ("peak cgroup memory (MiB)", s[SAMPLE.cgroup_peak_bytes].max() / MIB),
        ("min host available (MiB)", avail.min() / MIB),
        (f"time below {warning_bytes / MIB:.0f} MiB available (s)", below),
        ("peak swap used (MiB)", swap.max() / MIB),
        ("swap growth (MiB)", (swap.iloc[-1] - swap.iloc[0]) / MIB if len(swap) else np.nan),
        ("peak sidecar RSS (MiB)", s[SAMPLE.sidecar_rss_bytes].max() / MIB),
        ("peak load-generator RSS (MiB)", s[SAMPLE.loadgen_rss_bytes].max() / MIB),
    ]


def target_unread(s: pd.DataFrame) -> bool:
    """The sampler watched a target and read nothing of it the whole run: every RSS reading 0, or no
    process counted (a selection that matched nothing, a launcher whose child it did not follow). Its
    memory is then not measured, not 0 MiB. No target watched at all (empty cells) is not this case."""
    rss, procs = s[SAMPLE.target_rss_bytes].dropna(), s[SAMPLE.target_procs].dropna()
    return not (rss.empty and procs.empty) and not (rss > 0).any()


def target_unread_line(run: RunData) -> str | None:
    """The one line for a run whose target read 0 throughout (judged host): what was read, what picks
    the processes, where the counted ones are listed; None otherwise."""
    s = judged_samples(run)
    if s is None or s.empty or not target_unread(s):
        return None
    procs = s[SAMPLE.target_procs].max()
    counted = "no process counted" if pd.isna(procs) or procs == 0 else "RSS 0 in every reading"
    watched = (run.meta.get("target") or {}).get("sampled") or []
    what = f" ({'; '.join(map(str, watched))})" if watched else ""
    return (
        f"target memory not measured: the sampler read the target{what} {len(s)} times, {counted}; "
        "--target-pid, --target-match or --target-cgroup picks the processes (a command started through a "
        "launcher, such as npx, uvx or env, may need --target-match on what it launches); processes.csv "
        "lists what was counted"
    )


def cpu_rows(s: pd.DataFrame) -> list[tuple[str, float]]:
    """Time-weighted mean and peak CPU of host, target and load generator."""
    rows: list[tuple[str, float]] = []
    for col, label in (
        (SAMPLE.host_cpu_pct, "host CPU %"),
        (SAMPLE.target_cpu_pct, "target CPU % (of one core)"),
        (SAMPLE.loadgen_cpu_pct, "load-generator CPU % (of one core)"),
        (SAMPLE.loadgen_children_cpu_pct, "CPU % of helper processes the load generator ran (of one core)"),
    ):
        rows.append((f"mean {label}", time_weighted_mean(s["ts"], s[col])))
        rows.append((f"peak {label}", s[col].max()))
    rows.append(("peak load average (1 min)", s[SAMPLE.load1].max()))
    return rows


def unmeasured_series(run: RunData) -> list[str]:
    """Sample columns with no value at all: the report names them instead of printing zeros."""
    s = run.samples
    if s is None:
        return []
    return [c for c in s.columns if c not in ("ts", SAMPLE.elapsed_s, "event") and s[c].isna().all()]
