"""The open model's arrivals as they went: how late each one started (start_lateness_ms, on its first
request), how many started late or were dropped (count, share, first time), from requests.csv and
run.json's open_model. Pure: RunData in, a record and a table out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.model import RunData, per_run
from analysis.stats import describe
from contract.schema import REQUEST

LATE_MS = 100.0  # an arrival started more than this after its due time is late
LATE_RULE = (
    f"each arrival counts once: started (on time), late: started more than {LATE_MS:g} ms after its due "
    "time (no agent free, or a busy load generator), or dropped: never sent (no agent free within 1 s "
    "of it, or issued to an agent as the run stopped)"
)


@dataclass(frozen=True)
class Arrivals:
    process: str  # constant, poisson, gamma (burstiness b)
    due: int  # arrivals the pacing dealt with: started + late + dropped, each arrival in one of them
    started: int  # arrivals whose first request is in requests.csv, on time
    late: int  # ... started more than LATE_MS after their due time
    unsent: int  # issued to an agent and never sent (the run stopped first): counted in dropped
    first_late_s: float | None  # seconds into the run the first late arrival was due
    dropped: int
    first_dropped_s: float | None
    lateness: dict  # describe() of start_lateness_ms: n, p50, p90, p95, p99, max

    @property
    def late_share(self) -> float | None:
        return self.late / self.due if self.due else None

    @property
    def dropped_share(self) -> float | None:
        return self.dropped / self.due if self.due else None


@per_run
def arrivals(run: RunData) -> Arrivals | None:
    """The run's arrivals; None for a closed model (no open_model in run.json)."""
    meta = run.meta.get("open_model")
    if not isinstance(meta, dict):
        return None
    req = run.requests
    paced = req[req[REQUEST.start_lateness_ms].notna()] if req is not None else pd.DataFrame()
    lateness = paced[REQUEST.start_lateness_ms] if len(paced) else pd.Series(dtype=float)
    start = run.meta.get("start_ts") or meta.get("start_ts")
    late = paced[lateness > LATE_MS] if len(paced) else paced
    first_late = None
    if len(late) and start is not None:
        first_late = float((late["ts"] - late[REQUEST.start_lateness_ms] / 1000).min() - start)
    issued = meta.get("issued_arrivals")
    sent = len(paced)
    unsent = max(0, issued - sent) if isinstance(issued, int) else 0  # issued_arrivals vs started: noted
    dropped = int(meta.get("dropped_arrivals") or 0) + unsent
    first_drop = meta.get("first_dropped_ts")
    return Arrivals(
        process=_process(meta),
        due=sent + dropped,
        started=sent - len(late),
        late=len(late),
        unsent=unsent,
        first_late_s=first_late,
        dropped=dropped,
        first_dropped_s=first_drop - start if first_drop is not None and start is not None else None,
        lateness=describe(lateness, "lateness_", percentiles=(50, 90, 95, 99)),
    )


def arrivals_table(a: Arrivals) -> pd.DataFrame:
    """Started, late and dropped arrivals: count, share and the first one's time into the run."""
    rows = [
        {"arrivals": "started", "count": a.started, "share_pct": _pct(a.started, a.due), "first_s": None},
        {"arrivals": "late", "count": a.late, "share_pct": _pct(a.late, a.due), "first_s": a.first_late_s},
        {
            "arrivals": "dropped",
            "count": a.dropped,
            "share_pct": _pct(a.dropped, a.due),
            "first_s": a.first_dropped_s,
        },
    ]
    return pd.DataFrame(rows).set_index("arrivals")


def lateness_table(a: Arrivals) -> pd.DataFrame:
    """Start lateness percentiles (ms) with their sample count."""
    return pd.DataFrame([a.lateness], index=pd.Index(["arrivals started"], name="arrivals"))


def arrivals_line(a: Arrivals) -> str:
    """One console line: started, late and dropped with shares and first times, lateness p95."""

    def part(name: str, count: int, share: float | None, first: float | None) -> str:
        text = f"{count:,} {name}"
        if count and share is not None:
            text += f" ({share * 100:.1f} %{f', first {first:.0f} s in' if first is not None else ''})"
        return text

    n, p95 = a.lateness["lateness_n"], a.lateness["lateness_p95"]
    lateness = f"; start lateness p95 {p95:.1f} ms (n={n:,})" if n else ""
    unsent = f" ({a.unsent:,} of them issued as the run stopped, never sent)" if a.unsent else ""
    return (
        f"arrivals ({a.process}): {a.due:,}: {a.started:,} started on time, "
        f"{part('late', a.late, a.late_share, a.first_late_s)}, "
        f"{part('dropped', a.dropped, a.dropped_share, a.first_dropped_s)}{unsent}{lateness}"
    )


def _process(meta: dict) -> str:
    kind = str(meta.get("arrivals") or "constant")
    return f"gamma, burstiness {meta.get('burstiness'):g}" if kind == "gamma" else kind


def _pct(part: int, whole: int) -> float | None:
    return part / whole * 100 if whole else None
