"""Report section for sampler services on gateway hosts (run.json `remote_samplers`): each host's clock
offset and every gap in its rows, in seconds. Reads run.json's record only; no samples math.
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData, Section


def gaps_table(records: list[dict], end_ts: float | None) -> pd.DataFrame | None:
    """One row per gap: host, start, end (the run's end for a gap never closed), seconds, why."""
    rows = []
    for rec in records:
        for gap in rec.get("gaps", []):
            end = gap.get("end_ts") if gap.get("end_ts") is not None else end_ts
            rows.append(
                {
                    "host": rec.get("host", rec.get("url")),
                    "start_ts": gap["start_ts"],
                    "end_ts": end,
                    "seconds": None if end is None else round(end - gap["start_ts"], 1),
                    "until_run_end": gap.get("end_ts") is None,
                    "why": gap.get("why", ""),
                }
            )
    return pd.DataFrame(rows) if rows else None


def clock_table(records: list[dict]) -> pd.DataFrame:
    """Per service: host, URL, measured offsets (first, last) and the round trip they came from, in ms."""
    rows = []
    for rec in records:
        clock = rec.get("clock") or [{}]
        rows.append(
            {
                "host": rec.get("host"),
                "url": rec.get("url"),
                "offset_ms_first": _ms(clock[0].get("offset_s")),
                "offset_ms_last": _ms(clock[-1].get("offset_s")),
                "rtt_ms_best": _ms(min((c.get("rtt_s", float("inf")) for c in clock), default=None)),
                "checks": len(rec.get("clock", [])),
            }
        )
    return pd.DataFrame(rows)


def remote_samplers_section(run: RunData) -> Section | None:
    records = run.meta.get("remote_samplers")
    if not records:
        return None
    gaps = gaps_table(records, run.meta.get("end_ts"))
    notes = ["remote timestamps are shifted onto the load generator's clock by the offset measured last"]
    if gaps is None:
        notes.append("no gaps: every sampler service answered for the whole run")
    else:
        notes.append(
            f"GAPS: {len(gaps)} span(s) without samples from a sampler service "
            f"({gaps['seconds'].sum():.1f} s in all); those spans are not measured, not zero"
        )
    tables = [("sampler services", clock_table(records))] + ([("gaps", gaps)] if gaps is not None else [])
    return Section("Sampler services (gateway hosts)", tables, notes)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None or seconds == float("inf") else round(seconds * 1000, 1)
