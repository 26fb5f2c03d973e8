"""A history across runs: one row per run directory under a folder (newest first) with its headline, a
trend chart per profile and target, and every directory that cannot be read listed with its reason.

Reads run directories and writes index.md, index.html and trend PNGs; the numbers are the headlines'.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from analysis import render
from analysis.headline import Figure, headline
from analysis.load import is_run_dir, load_run
from analysis.nights import FIGURES, LAST_NIGHTS, Judgement, Night, judge, read_night
from analysis.run_target import target_of
from contract import schema

INDEX_MD, INDEX_HTML, JUDGEMENT_JSON = "index.md", "index.html", "judgement.json"
MAX_TREND_PANELS = 4


@dataclass
class IndexRow:
    """One run directory as the index shows it; `problem` says why it could not be read."""

    path: Path
    when: float
    run_id: str
    profile: str = ""
    target: str = ""
    verdict: str = ""
    figures: list[Figure] = field(default_factory=list)
    problem: str | None = None
    exit_code: str = ""


def index_rows(folder: Path) -> list[IndexRow]:
    """Every subdirectory of `folder` (hidden ones aside), newest first."""
    dirs = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return sorted((_row(p) for p in dirs), key=lambda r: r.when, reverse=True)


def _row(path: Path) -> IndexRow:
    if (path / schema.SUMMARY_JSON).is_file():  # the run's figures as it wrote them: no CSV read
        night = read_night(path, target_of)
        if night.problem is None:
            return _summary_row(night)
    when = path.stat().st_mtime
    if not is_run_dir(path):
        return IndexRow(path, when, path.name, problem="not a run directory: no run.json and no run CSV")
    try:
        run = load_run(path)
        head = headline(run)
    except Exception as exc:  # an index lists every directory, the unreadable ones with their reason
        return IndexRow(path, when, path.name, problem=f"unreadable: {type(exc).__name__}: {exc}")
    meta = run.meta
    start = next((meta[k] for k in ("start_ts", "created_ts") if _is_number(meta.get(k))), when)
    problem = "; ".join(run.missing) if schema.RUN_JSON in " ".join(run.missing) else None
    return IndexRow(
        path,
        float(start),
        str(meta.get("run_id", path.name)),
        head.profile,
        target_of(run.meta),
        head.verdict,
        head.figures,
        problem,
        str(meta.get("exit_code", "not recorded")),
    )


def _summary_row(night: Night) -> IndexRow:
    figures = [
        Figure(f.label, night.figures[f.name], f.unit, "summary.json")
        for f in FIGURES
        if f.name in night.figures
    ]
    exit_code = "not recorded" if night.exit_code is None else str(night.exit_code)
    return IndexRow(
        night.path,
        night.when,
        night.run_id,
        night.profile,
        night.target,
        night.verdict,
        figures,
        None,
        exit_code,
    )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def trend_plots(rows: list[IndexRow], out: Path) -> dict[tuple[str, str], Path]:
    """Per profile and target with two runs or more: each numeric headline figure over time."""
    readable = [r for r in rows if r.problem is None or r.figures]
    groups: dict[tuple[str, str], list[IndexRow]] = {}
    for row in readable:
        groups.setdefault((row.profile, row.target), []).append(row)
    plots = {}
    for i, (key, group) in enumerate(sorted(groups.items())):
        series = _series(group)
        if len(group) >= 2 and series:
            plots[key] = _draw(key, series, out / f"trend-{i + 1}-{_slug(key[0])}.png")
    return plots


def _series(group: list[IndexRow]) -> dict[str, pd.Series]:
    """Numeric figures present in two runs or more, as label (unit) -> value by date."""
    values: dict[str, dict[datetime, float]] = {}
    for row in group:
        for f in row.figures:
            if isinstance(f.value, int | float) and not isinstance(f.value, bool) and not pd.isna(f.value):
                name = f"{f.label} ({f.unit})" if f.unit else f.label
                values.setdefault(name, {})[datetime.fromtimestamp(row.when, UTC)] = float(f.value)
    found = {k: pd.Series(v).sort_index() for k, v in values.items() if len(v) >= 2}
    return dict(list(found.items())[:MAX_TREND_PANELS])


def _draw(key: tuple[str, str], series: dict[str, pd.Series], out: Path) -> Path:
    fig, axes = plt.subplots(len(series), 1, figsize=(9, 1.9 * len(series) + 0.8), sharex=True, squeeze=False)
    for ax, (name, s) in zip(axes[:, 0], series.items(), strict=True):
        ax.plot(s.index, s.to_numpy(), marker="o", lw=1)
        ax.set_ylabel(name, fontsize=8)
    axes[0, 0].set_title(f"{key[0]} against {key[1]}", fontsize=9)
    axes[-1, 0].set_xlabel("run start (UTC)")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "runs"


def _table(rows: list[IndexRow]) -> pd.DataFrame:
    records = [
        {
            "run": r.run_id,
            "started (UTC)": datetime.fromtimestamp(r.when, UTC).strftime("%Y-%m-%d %H:%M"),
            "profile": r.profile or "—",
            "target": r.target or "—",
            "verdict": r.verdict if r.problem is None else f"{r.verdict} ({r.problem})".strip(),
            "exit code": r.exit_code or "—",
            "headline figures": "; ".join(f.text() for f in r.figures if f.source != "Run summary"),
        }
        for r in rows
        if r.problem is None or r.profile
    ]
    return pd.DataFrame(
        records,
        columns=["run", "started (UTC)", "profile", "target", "verdict", "exit code", "headline figures"],
    )


def write_index(folder: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write index.md and index.html (and trend PNGs) for every run directory under `folder`."""
    return _write(folder, out_dir, None)[0]


def judge_index(
    folder: str | Path,
    out_dir: str | Path | None = None,
    last: int = LAST_NIGHTS,
    tolerance: dict[str, float] | None = None,
) -> tuple[Path, Judgement]:
    """The index with tonight's verdict against the nights before (analysis/nights.py), and that verdict
    in judgement.json beside it."""
    path, verdict = _write(folder, out_dir, (last, tolerance or {}))
    assert verdict is not None  # asked for
    return path, verdict


def _write(
    folder: str | Path, out_dir: str | Path | None, judging: tuple[int, dict] | None
) -> tuple[Path, Judgement | None]:
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"runs folder not found: {root}")
    out = Path(out_dir) if out_dir is not None else root
    out.mkdir(parents=True, exist_ok=True)
    rows = index_rows(root)
    verdict = None
    if judging is not None:
        nights = [read_night(r.path, target_of) for r in rows]
        verdict = judge(nights, *judging)
        (out / JUDGEMENT_JSON).write_text(json.dumps(verdict.as_json(), indent=2, default=str) + "\n")
    plots = trend_plots(rows, out)
    unreadable = [f"{r.path.name}: {r.problem}" for r in rows if r.problem is not None and not r.profile]
    title = f"Runs in {root.resolve()}"
    table = _table(rows)
    (out / INDEX_MD).write_text(_markdown(title, table, plots, unreadable, verdict))
    (out / INDEX_HTML).write_text(_html(title, table, plots, unreadable, verdict))
    return out / INDEX_HTML, verdict


def _verdict_table(verdict: Judgement) -> pd.DataFrame:
    rows = []
    for g in verdict.groups:
        figures = [f.text() for f in g.figures] or [g.why]
        left = f" Left out: {'; '.join(g.left_out)}." if g.left_out else ""
        rows.append(
            {
                "profile": g.profile,
                "target": g.target,
                "tonight": f"{g.tonight} ({g.tonight_started})",
                "verdict": g.verdict,
                "figures": "; ".join(figures) + left,
            }
        )
    return pd.DataFrame(rows, columns=["profile", "target", "tonight", "verdict", "figures"])


def _verdict_head(verdict: Judgement) -> str:
    return (
        f"Each profile and target's newest run against its last {verdict.last} nights that completed with "
        f"exit 0 (exit code {verdict.exit_code}). A figure regressed when tonight is worse than the "
        "nights' worst by more than its margin, improved when better than their best by as much: "
        + "; ".join(f"{label} {margin}" for label, margin in verdict.margins.items())
        + "."
    )


def _markdown(
    title: str, table: pd.DataFrame, plots: dict, unreadable: list[str], verdict: Judgement | None
) -> str:
    out = [f"# {title}", ""]
    if verdict is not None:
        out += ["## Tonight against the nights before", "", _verdict_head(verdict), ""]
        out += [render.table_markdown(_verdict_table(verdict)), ""]
    out += [f"{len(table)} runs, newest first.", "", render.table_markdown(table), ""]
    for (profile, target), path in plots.items():
        out += [f"## Trend: {profile} against {target}", "", f"![trend]({path.name})", ""]
    if unreadable:
        out += ["## Directories that could not be read", ""] + [f"- {u}" for u in unreadable]
    return "\n".join(out) + "\n"


def _html(
    title: str, table: pd.DataFrame, plots: dict, unreadable: list[str], verdict: Judgement | None
) -> str:
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{render.STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
    ]
    if verdict is not None:
        out += ["<h2>Tonight against the nights before</h2>", f"<p>{html.escape(_verdict_head(verdict))}</p>"]
        out.append(render.table_html(_verdict_table(verdict)))
    out += [
        f"<p>{len(table)} runs, newest first.</p>",
        render.table_html(table),
    ]
    for (profile, target), path in plots.items():
        out += [
            f"<h2>Trend: {html.escape(profile)} against {html.escape(target)}</h2>",
            render.image_html(path),
        ]
    if unreadable:
        out.append("<h2>Directories that could not be read</h2><ul>")
        out += [f"<li>{html.escape(u)}</li>" for u in unreadable] + ["</ul>"]
    out.append("</body></html>")
    return "\n".join(out)
