"""Which machine each sample came from (samples.csv `host`): the rows split per host for the resource
table, and the one host whose target the soak verdict and the rounds table judge. Pure; no I/O.

A run with several sampler services (--sampler-url repeated) has rows of every gateway host plus the load
generator's own; a single-machine run has one host. Verdicts read one target: the first service's.
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData, per_run

SINGLE = "value"  # the resource table's one column when every row comes from one host


def hosts_of(samples: pd.DataFrame) -> list[str]:
    """Distinct hosts in first-seen order (rows without a host are not a host)."""
    if "host" not in samples:
        return []
    return [str(h) for h in samples["host"].dropna().unique() if str(h)]


def by_host(samples: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{host: its rows} when rows come from several hosts, else {"value": all rows}."""
    hosts = hosts_of(samples)
    if len(hosts) <= 1:
        return {SINGLE: samples}
    return {h: samples[samples["host"] == h] for h in hosts}


def judged_host(run: RunData) -> str | None:
    """The host the verdicts read: the first --sampler-url service's (run.json remote_samplers), else
    None (one machine: every row)."""
    records = run.meta.get("remote_samplers") or []
    first = records[0].get("host") if records and isinstance(records[0], dict) else None
    samples = run.samples
    if first is None or samples is None or len(hosts_of(samples)) <= 1:
        return None
    return str(first)


@per_run
def judged_samples(run: RunData) -> pd.DataFrame | None:
    """The sample rows of the judged host (all rows when there is one host)."""
    host = judged_host(run)
    if host is None or run.samples is None:
        return run.samples
    return run.samples[run.samples["host"] == host]


def hosts_note(run: RunData) -> str | None:
    """The report's line on hosts, when rows come from several."""
    hosts = hosts_of(run.samples) if run.samples is not None else []
    if len(hosts) <= 1:
        return None
    judged = judged_host(run)
    verdicts = f"the soak verdict and the rounds table read {judged}" if judged else "verdicts read every row"
    return f"one column per host ({', '.join(hosts)}): hosts are never mixed; {verdicts}"
