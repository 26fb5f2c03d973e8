"""PNG plots for the report: resource timeline with profile phases shaded and named, latency/TTFT/TPOT
per load level, RSS vs number of agents, the rounds chart. Legends and axes in words (analysis/labels.py).
Draws and saves only; every number comes from the table functions or RunData.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from analysis.labels import label
from analysis.levels import ARRIVALS_PER_S, Levels
from analysis.model import RunData
from analysis.queue import stale_limit_s, stale_readings
from analysis.resources import DEFAULT_WARNING_BYTES
from analysis.rounds import phase_windows
from contract.schema import MIB, REQUEST, SAMPLE, USER
from contract.units import parse_duration, parse_size

MAX_LINE_POINTS = 5000  # longer series are thinned for drawing only


def _panels(run: RunData, bins: pd.DataFrame | None) -> list[tuple[str, pd.DataFrame, list[str]]]:
    """(y label, frame with ts, columns) for every timeline panel that has data."""
    s = run.samples if run.samples is not None else pd.DataFrame(columns=["ts"])
    step = max(1, len(s) // MAX_LINE_POINTS)
    mem = s.iloc[::step].assign(
        **{
            c + "_mib": s[c].iloc[::step] / MIB
            for c in (SAMPLE.target_rss_bytes, SAMPLE.host_available_bytes, SAMPLE.host_swap_used_bytes)
            if c in s
        }
    )
    panels = []
    if run.users is not None and not run.users.empty:  # Locust's own count, once a tick (users.csv)
        panels.append(("users", run.users, ["users", USER.target_users]))
    elif bins is not None:  # older runs: agents active in each time bin, from requests.csv
        panels.append(("users", bins.rename(columns={"start_ts": "ts"}), ["users"]))
    for name, cols in (
        ("target RSS (MiB)", ["target_rss_bytes_mib"]),
        ("available (MiB)", ["host_available_bytes_mib"]),
        ("swap used (MiB)", ["host_swap_used_bytes_mib"]),
        ("CPU %", [SAMPLE.host_cpu_pct, SAMPLE.target_cpu_pct]),
        ("queue", ["queue_length", "in_progress"]),
    ):
        have = [c for c in cols if c in mem and mem[c].notna().any()]
        if have:
            panels.append((name, mem, have))
    return panels


def _legend(column: str) -> str:
    """A plotted column in words: the "_mib" copies are the schema's byte columns shown in MiB."""
    return label(column.removesuffix("_mib"))


def timeline_plot(
    run: RunData, bins: pd.DataFrame | None, out: Path, warning_bytes: float = DEFAULT_WARNING_BYTES
) -> Path | None:
    """Stacked panels on one time axis (minutes from start), phases shaded, warning line drawn."""
    panels = _panels(run, bins)
    if not panels:
        return None
    t0 = min(float(frame["ts"].min()) for _, frame, _ in panels)
    fig, axes = plt.subplots(
        len(panels), 1, sharex=True, figsize=(10, 1.8 * len(panels) + 0.6), squeeze=False
    )
    for row, (ax, (name, frame, cols)) in enumerate(zip(axes[:, 0], panels, strict=True)):
        minutes = (frame["ts"] - t0) / 60
        steps = "steps-post" if name in ("users", "queue") else "default"
        for col in cols:
            ax.plot(minutes, frame[col], lw=1, label=_legend(col), drawstyle=steps)
        if name == "queue" and (stale := stale_readings(frame, run.meta)).any():
            limit = f"older than {stale_limit_s(run.meta):g} s when read"
            ax.plot(
                minutes[stale], frame.loc[stale, cols[0]], "x", color="red", ms=4, label=f"stale: {limit}"
            )
        for value, rule in threshold_lines(run.meta, [c.removesuffix("_mib") for c in cols]):
            ax.axhline(value, color="purple", ls=":", lw=1, label=f"threshold {rule}")
        if name.startswith("available"):
            ax.axhline(
                warning_bytes / MIB,
                color="red",
                ls="--",
                lw=1,
                label=f"warning line {warning_bytes / MIB:,.0f} MiB",
            )
        _shade_phases(ax, run.meta, t0, named=row == 0)
        ax.set_ylabel(name if name != "users" else "agents", fontsize=8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("minutes since start")
    return _save(fig, out)


def threshold_lines(meta: dict, columns: list[str]) -> list[tuple[float, str]]:
    """The limits of run.json's thresholds on these columns, in the plot's units (MiB for bytes, ms,
    percent, counts), with their rule in words; a limit that does not parse is not drawn."""
    lines = []
    for th in meta.get("thresholds") or []:
        words = str(th.get("expr", "")).split() if isinstance(th, dict) else []
        if len(words) < 3 or words[0] not in columns:
            continue
        try:
            lines.append((_limit(words[0], words[-1]), " ".join([label(words[0]), *words[1:]])))
        except ValueError:
            continue
    return lines


def _limit(column: str, text: str) -> float:
    if column.endswith("_bytes"):
        return parse_size(text) / MIB
    if column.endswith("_ms") and not text.endswith("ms") and text[-1:].isalpha():
        return parse_duration(text) * 1000  # "5s", "2m"
    return float(text.removesuffix("ms")) if column.endswith("_ms") else float(text.rstrip("%"))


def _shade_phases(ax: plt.Axes, meta: dict, t0: float, named: bool) -> None:
    """Shade each phase; on the top panel, name it above the axes (alternating rows, so neighbours
    do not overlap and no name covers data)."""
    for i, phase in enumerate(phase_windows(meta)):
        start, end = (phase["start_ts"] - t0) / 60, (phase["end_ts"] - t0) / 60
        ax.axvspan(start, end, alpha=0.12, color=f"C{i % 10}", lw=0)
        if named:
            ax.text(
                (start + end) / 2,
                1.02 + 0.14 * (i % 2),
                str(phase.get("name", "")),
                transform=ax.get_xaxis_transform(),
                fontsize=7,
                ha="center",
                va="bottom",
                clip_on=False,
            )


def latency_vs_level_plot(levels: Levels | None, out_dir: Path, meta: dict | None = None) -> Path | None:
    """Latency p50/p95, TTFT p50 and TPOT p50 per load level in the run's own unit (arrivals/s or
    agents), with the latency and TTFT thresholds: latency_vs_users.png."""
    if levels is None or levels.table.empty:
        return None
    table = levels.table
    fig, ax = plt.subplots(figsize=(7, 4))
    for col in ("latency_p50_ms", "latency_p95_ms", "ttft_p50_ms", "tpot_p50_ms"):
        if col in table and table[col].notna().any():
            ax.plot(table.index, table[col], marker="o", label=label(col))
    for value, rule in threshold_lines(meta or {}, [REQUEST.latency_ms, REQUEST.ttft_ms, "tpot_ms"]):
        ax.axhline(value, color="purple", ls=":", lw=1, label=f"threshold {rule}")
    ax.set_xlabel("arrivals per second (asked)" if levels.unit == ARRIVALS_PER_S else "running agents")
    ax.set_ylabel("milliseconds")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _save(fig, out_dir / "latency_vs_users.png")


def rss_vs_agents_plot(points: pd.DataFrame | None, out: Path) -> Path | None:
    """Target RSS read after each agent was created, against the agent count N (3 counts at least)."""
    if points is None or points["n"].nunique() < 3:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(points["n"], points[SAMPLE.target_rss_bytes] / MIB, marker=".", lw=1)
    ax.set_xlabel("agents (N)")
    ax.set_ylabel("target RSS (MiB)")
    return _save(fig, out)


def rounds_plot(table: pd.DataFrame | None, out: Path, warning_bytes: float) -> Path | None:
    """Per round: peak target memory and minimum available memory as bars, the warning line, and
    each round's pass/fail written above its bars."""
    if table is None or table.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    x = range(len(table))
    ax.bar([i - 0.2 for i in x], table["peak_target_rss_mib"], 0.4, label="peak target RSS (MiB)")
    ax.bar([i + 0.2 for i in x], table["min_available_mib"], 0.4, label="min host available (MiB)")
    ax.axhline(
        warning_bytes / MIB, color="red", ls="--", lw=1, label=f"warning line {warning_bytes / MIB:,.0f} MiB"
    )
    top = float(pd.concat([table["peak_target_rss_mib"], table["min_available_mib"]]).max())
    for i, passed in zip(x, table["passed"], strict=True):
        ax.text(
            i, top * 1.04, "passed" if passed else "FAILED", ha="center", color="green" if passed else "red"
        )
    ax.set_ylim(0, top * 1.15 if top > 0 else 1)
    ax.set_xticks(
        list(x),
        [f"round {r}\n{c:g} concurrent" for r, c in zip(table.index, table["concurrency"], strict=True)],
    )
    ax.set_ylabel("MiB")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _save(fig, out)


def _save(fig: plt.Figure, out: Path) -> Path:
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
