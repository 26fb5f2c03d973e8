"""Tonight against the nights before: for each profile and target, the newest run's figures (p95 latency,
TTFT and TPOT, error rate, goodput, $ per task, memory slope, peak RSS, N_max, breaking level) judged
against its last nights that completed with exit 0: regressed, improved or within the nights' spread,
each with its rule and the nights' values beside tonight's.

Reads each run's run.json and summary.json (made from the run where absent); writes no file (the index
writes judgement.json and its verdict section).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analysis.load import is_run_dir
from contract import exit_codes, schema

LAST_NIGHTS = 7  # --judge-last: how many previous nights (completed, exit 0) tonight is judged against
MIN_NIGHTS = 3  # fewer: "not judged"
REGRESSED, IMPROVED, WITHIN, NOT_JUDGED = "regressed", "improved", "within the nights' spread", "not judged"


def _dig(doc: Any, *keys: str) -> Any:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _error_pct(s: dict) -> float | None:
    total, failed = _number(_dig(s, "requests", "total")), _number(_dig(s, "requests", "failed"))
    return 100 * failed / total if total and failed is not None else None


def _goodput_pct(s: dict) -> float | None:
    share = _number(_dig(s, "goodput", "share"))
    return None if share is None else 100 * share


def _usd_per_task(s: dict) -> float | None:
    usd, done = _number(_dig(s, "cost", "as_billed")), _number(_dig(s, "tasks", "done"))
    return usd / done if usd is not None and done else None


@dataclass(frozen=True)
class FigureRule:
    """One judged figure: where summary.json holds it, which way is worse, and the margin beyond the
    nights' range that counts: the larger of `relative` x the nights' median and `absolute`."""

    name: str  # as --judge-tolerance names it
    label: str
    unit: str
    higher_is_worse: bool
    relative: float
    absolute: float
    read: Callable[[dict], float | None]

    def margin(self, nights: list[float]) -> float:
        return max(self.relative * abs(_median(nights)), self.absolute)

    def margin_text(self) -> str:
        parts = [f"{100 * self.relative:g} % of the nights' median"] if self.relative else []
        parts += [f"{self.absolute:g} {self.unit}".strip()] if self.absolute else []
        worse = "higher" if self.higher_is_worse else "lower"
        both = f"the larger of {parts[0]} and {parts[1]}" if len(parts) == 2 else (parts or ["none"])[0]
        return f"{both}, {worse} worse"

    def rule(self) -> str:
        return (
            f"regressed when tonight is worse than the nights' worst by more than {self.margin_text()}; "
            "improved when better than their best by as much; else within the nights' spread"
        )


FIGURES = (
    FigureRule(
        "latency_p95",
        "p95 latency",
        "ms",
        True,
        0.10,
        0.0,
        lambda s: _number(_dig(s, "latency", "latency", "p95")),
    ),
    FigureRule(
        "ttft_p95", "p95 TTFT", "ms", True, 0.10, 0.0, lambda s: _number(_dig(s, "latency", "ttft", "p95"))
    ),
    FigureRule(
        "tpot_p95", "p95 TPOT", "ms", True, 0.10, 0.0, lambda s: _number(_dig(s, "latency", "tpot", "p95"))
    ),
    FigureRule("error_rate", "error rate", "%", True, 0.25, 1.0, _error_pct),
    FigureRule("goodput", "goodput", "%", False, 0.0, 2.0, _goodput_pct),
    FigureRule("usd_per_task", "$ per task", "$", True, 0.10, 0.0, _usd_per_task),
    FigureRule(
        "memory_slope",
        "target RSS slope",
        "MiB/h",
        True,
        0.0,
        5.0,
        lambda s: _number(_dig(s, "soak", "target RSS", "slope_per_h")),
    ),
    FigureRule(
        "peak_rss", "peak target RSS", "MiB", True, 0.10, 0.0, lambda s: _number(s.get("peak_target_rss_mib"))
    ),
    FigureRule("n_max", "N_max", "agents", False, 0.10, 0.0, lambda s: _number(_dig(s, "capacity", "n_max"))),
    FigureRule(
        "breaking_level",
        "breaking level",
        "",
        False,
        0.10,
        0.0,
        lambda s: _number(_dig(s, "breaking_level", "value")),
    ),
)
BY_NAME = {f.name: f for f in FIGURES}


@dataclass
class Night:
    """One run directory as the judgement reads it; `problem`: why it could not be read."""

    path: Path
    when: float
    run_id: str
    profile: str = ""
    target: str = ""
    exit_code: Any = None
    figures: dict[str, float] = field(default_factory=dict)
    problem: str | None = None
    verdict: str = ""  # the run's headline verdict

    def started(self) -> str:
        return datetime.fromtimestamp(self.when, UTC).strftime("%Y-%m-%d %H:%M")


@dataclass
class FigureVerdict:
    name: str
    label: str
    unit: str
    tonight: float
    nights: list[float]
    verdict: str
    rule: str

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        low, high = min(self.nights), max(self.nights)
        median = _fmt(_median(self.nights))
        return (
            f"{self.label}: {self.verdict}: tonight {_fmt(self.tonight)}{unit} against the last "
            f"{len(self.nights)} nights' {_fmt(low)} to {_fmt(high)}{unit} (median {median})"
        )


@dataclass
class GroupJudgement:
    """Tonight's run of one profile and target against its nights."""

    profile: str
    target: str
    tonight: str
    tonight_started: str
    nights: list[str]
    verdict: str
    why: str
    figures: list[FigureVerdict] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # older runs not used as nights, with the reason


@dataclass
class Judgement:
    last: int
    groups: list[GroupJudgement]
    unreadable: list[str]
    margins: dict[str, str]  # each figure's margin as judged (its --judge-tolerance applied)

    @property
    def exit_code(self) -> int:
        if any(f.verdict == REGRESSED for g in self.groups for f in g.figures):
            return exit_codes.THRESHOLD_FAILED
        if not self.groups or any(g.verdict == NOT_JUDGED for g in self.groups):
            return exit_codes.THRESHOLDS_UNJUDGED
        return exit_codes.OK

    def as_json(self) -> dict:
        return {"exit_code": self.exit_code, "last": self.last, **asdict(self)}

    def lines(self) -> list[str]:
        """The verdict as the console and index.md give it."""
        out = []
        for g in self.groups:
            out.append(
                f"{g.profile} against {g.target}: tonight {g.tonight} ({g.tonight_started}): {g.verdict}"
            )
            out += [f"  {f.text()}" for f in g.figures if f.verdict != WITHIN] or [f"  {g.why}"]
        return out


def _fmt(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def read_night(path: Path, target_of: Callable[[dict], str]) -> Night:
    """run.json and summary.json of one run directory (summary.json made from the run where absent)."""
    when = path.stat().st_mtime
    if not is_run_dir(path):
        return Night(path, when, path.name, problem="not a run directory: no run.json and no run CSV")
    try:
        meta = _json(path / schema.RUN_JSON)
        summary = _json(path / schema.SUMMARY_JSON) if (path / schema.SUMMARY_JSON).exists() else _made(path)
    except Exception as exc:  # a folder of nights names its unreadable runs and goes on
        return Night(path, when, path.name, problem=f"unreadable: {type(exc).__name__}: {exc}")
    start = next((v for k in ("start_ts", "created_ts") if (v := _number(meta.get(k))) is not None), when)
    figures = {f.name: v for f in FIGURES if (v := f.read(summary)) is not None}
    profile = summary.get("profile") or meta.get("profile")
    return Night(
        path,
        start,
        str(meta.get("run_id", path.name)),
        str(profile.get("name", "") if isinstance(profile, dict) else profile or ""),
        target_of(meta),
        meta.get("exit_code", summary.get("exit_code")),
        figures,
        verdict=str(_dig(summary, "headline", "verdict") or ""),
    )


def _json(path: Path) -> dict:
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return doc


def _made(path: Path) -> dict:
    from analysis.load import load_run  # only for a run without summary.json: the slow way
    from analysis.summary_json import summary

    return summary(load_run(path))


def judge(
    nights: list[Night], last: int = LAST_NIGHTS, tolerance: dict[str, float] | None = None
) -> Judgement:
    """Per profile and target: the newest readable run against its `last` previous nights that ended
    with exit 0; `tolerance` replaces a figure's relative margin (its name -> a fraction)."""
    rules = [
        FigureRule(
            f.name,
            f.label,
            f.unit,
            f.higher_is_worse,
            (tolerance or {}).get(f.name, f.relative),
            f.absolute,
            f.read,
        )
        for f in FIGURES
    ]
    groups: dict[tuple[str, str], list[Night]] = {}
    for night in sorted((n for n in nights if n.problem is None), key=lambda n: n.when, reverse=True):
        groups.setdefault((night.profile, night.target), []).append(night)
    judged = [_judge_group(runs, last, rules) for _, runs in sorted(groups.items())]
    unreadable = [f"{n.path.name}: {n.problem}" for n in nights if n.problem is not None]
    margins = {r.label: r.margin_text() for r in rules}
    return Judgement(last, judged, unreadable, margins)


def _judge_group(runs: list[Night], last: int, rules: list[FigureRule]) -> GroupJudgement:
    tonight, before = runs[0], runs[1:]
    nights: list[Night] = []
    left_out: list[str] = []
    for run in before:
        if len(nights) == last:
            break
        if str(run.exit_code) == "0":
            nights.append(run)
        else:
            why = "did not finish" if run.exit_code is None else f"ended with exit code {run.exit_code}"
            left_out.append(f"{run.run_id} ({run.started()}): {why}")
    group = GroupJudgement(
        tonight.profile,
        tonight.target,
        tonight.run_id,
        tonight.started(),
        [n.run_id for n in nights],
        "",
        "",
        left_out=left_out,
    )
    if len(nights) < MIN_NIGHTS:
        group.verdict = NOT_JUDGED
        group.why = f"{len(nights)} previous night(s) completed with exit 0; a judgement needs {MIN_NIGHTS}"
        return group
    group.figures = list(_figure_verdicts(tonight, nights, rules))
    verdicts = {f.verdict for f in group.figures}
    group.verdict = next(
        (v for v in (REGRESSED, IMPROVED) if v in verdicts), WITHIN if verdicts else NOT_JUDGED
    )
    group.why = (
        f"{len(group.figures)} figure(s) judged against {len(nights)} nights"
        if verdicts
        else "no figure tonight and the nights share"
    )
    return group


def _figure_verdicts(tonight: Night, nights: list[Night], rules: list[FigureRule]) -> Iterator[FigureVerdict]:
    for rule in rules:
        if rule.name not in tonight.figures:
            continue
        values = [n.figures[rule.name] for n in nights if rule.name in n.figures]
        if len(values) < MIN_NIGHTS:
            continue
        value, margin = tonight.figures[rule.name], rule.margin(values)
        sign = 1 if rule.higher_is_worse else -1
        worst, best = (max(values), min(values)) if rule.higher_is_worse else (min(values), max(values))
        if sign * (value - worst) > margin:
            verdict = REGRESSED
        elif sign * (best - value) > margin:
            verdict = IMPROVED
        else:
            verdict = WITHIN
        yield FigureVerdict(rule.name, rule.label, rule.unit, value, values, verdict, rule.rule())


def tolerance_option(text: str) -> tuple[str, float]:
    """--judge-tolerance FIG=X: X a fraction (0.3) or a percentage (30%); ValueError naming the figures."""
    name, _, value = text.partition("=")
    if name not in BY_NAME:
        raise ValueError(f"--judge-tolerance {text!r}: no figure {name!r}; figures: {', '.join(BY_NAME)}")
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        number = -1.0
    if not (math.isfinite(number) and number >= 0):
        raise ValueError(f"--judge-tolerance {text!r}: give a fraction (0.3) or a percentage (30%) >= 0")
    return name, number
