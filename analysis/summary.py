"""Run summary: what ran, how it ended, headline numbers; also the short console block the locustfile
prints at the end of every run. Pure: RunData in, DataFrame or text out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.arrivals import arrivals, arrivals_line
from analysis.capacity import capacity_points, run_capacity, run_churn, shared_pages_warning
from analysis.capacity_rows import has_rows, is_churn, memory_column
from analysis.churn import kept_text
from analysis.cost import describe_total, dollar_total, fictional_models, priced_usage, run_prices, usage_rows
from analysis.goodput import goodput
from analysis.headline import headline
from analysis.hosts import judged_samples
from analysis.knee import SATURATION_REMEDY
from analysis.loadgen_capacity import loadgen_capacity
from analysis.model import RunData
from analysis.model_calls import NOT_VISIBLE
from analysis.prices import PriceTableError
from analysis.resources import target_unread_line
from analysis.scores import SCORE_INPUTS, tpot_absent, with_scores
from analysis.stats import describe
from analysis.tasks import task_counts
from analysis.validity import SATURATION_RULE, run_validity
from analysis.workload import unverified_sizes
from contract import schema
from contract.derived import TPOT_MS
from contract.exit_codes import THRESHOLDS_UNJUDGED
from contract.records import WorkerLoss
from contract.schema import MIB, MODEL_CALL, REQUEST, SAMPLE, TASK_STATUS

NOT_RECORDED = "not recorded"


def run_summary_table(run: RunData) -> pd.DataFrame:
    """Key/value rows: run id, profile, target, times, stop reason, exit code, counts, thresholds."""
    meta = run.meta
    profile = meta.get("profile") or {}
    target = meta.get("target") or {}
    start, end = meta.get("start_ts"), meta.get("end_ts")
    rows = [
        ("run id", meta.get("run_id", run.path.name)),
        ("run directory", str(run.path)),
        ("profile", profile.get("name", NOT_RECORDED)),
        ("target", target.get("url", NOT_RECORDED)),
        ("gateway", target.get("gateway", NOT_RECORDED)),
        ("duration (s)", round(end - start, 1) if start is not None and end is not None else NOT_RECORDED),
        ("stop reason", meta.get("stop_reason", NOT_RECORDED)),
        ("exit code", meta.get("exit_code", NOT_RECORDED)),
    ]
    rows += [("worker lost", text) for text in worker_losses(meta)]
    rows += _count_rows(run) + _threshold_rows(meta)
    return pd.DataFrame(rows, columns=["item", "value"]).set_index("item").astype(str)


def worker_losses(meta: dict) -> list[str]:
    """Workers a distributed run lost (run.json `workers_lost`): which, when, with how many agents."""
    return [WorkerLoss.from_json(d).text() for d in meta.get("workers_lost") or [] if isinstance(d, dict)]


def _count_rows(run: RunData) -> list[tuple[str, object]]:
    req = run.requests
    rows: list[tuple[str, object]] = []
    if req is not None:
        rows += [
            ("requests", len(req)),
            ("failed requests", int((req["ok"] == 0).sum())),
            ("tokens in / out", tokens_total(run)),
        ]
    counts = task_counts(run)
    if counts:
        rows.append(
            (
                "tasks submitted / done / not done",
                f"{counts['submitted']} / {counts['done']} / {counts['not_done']}",
            )
        )
    return rows


def tokens_total(run: RunData) -> str:
    """The run's one tokens total, as the Cost table counts them, with its scope named: every LLM call the
    kit recorded, from the calls' rows and from tasks' rows (a task board's calls happen inside the
    gateway); the model's own count beside it when the model is the kit's simulator, else the calls a
    gateway made on its own named as not visible."""
    usage, source = usage_rows(run)
    if source == "none":
        return NOT_RECORDED
    tokens = f"{_total(usage, REQUEST.tokens_in)} / {_total(usage, REQUEST.tokens_out)}"
    calls = run.model_calls
    if calls is None or calls.empty:
        return f"{tokens} (every LLM call the kit recorded, from {source}; {NOT_VISIBLE})"
    model = f"{_total(calls, MODEL_CALL.tokens_in)} / {_total(calls, MODEL_CALL.tokens_out)}"
    return f"{tokens} (every LLM call, from {source}; at the model: {model} over {len(calls):,} calls)"


def _total(frame: pd.DataFrame, col: str) -> str:
    return f"{int(frame[col].sum()):,}" if frame[col].notna().any() else NOT_RECORDED


def _threshold_rows(meta: dict) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for th in meta.get("thresholds") or []:
        if isinstance(th, dict) and "expr" in th:
            passed = th.get("passed")
            state = "passed" if passed is True else "FAILED" if passed is False else "not judged"
            rows.append((f"threshold {th['expr']}", f"{state} (value {th.get('value', '?')})"))
    return rows


def thresholds_table(meta: dict) -> pd.DataFrame | None:
    """The thresholds recorded in run.json, as they were judged."""
    ths = [th for th in meta.get("thresholds") or [] if isinstance(th, dict)]
    return pd.DataFrame(ths) if ths else None


def console_summary(run: RunData) -> str:
    """A short text block for the end of a run: the headline, memory, latency/TTFT with counts, tasks,
    tokens, path."""
    stop = run.meta.get("stop_reason", f"stop reason {NOT_RECORDED}")
    lines = [f"run {run.meta.get('run_id', run.path.name)}: {stop}"]
    lines += headline(run).lines()
    lines += _memory_lines(run) + _latency_lines(run) + _goodput_lines(run)
    if (found := arrivals(run)) is not None:
        lines.append(arrivals_line(found))
    counts = task_counts(run)
    if counts:
        lines.append(f"tasks: {counts['done']} done, {counts['not_done']} not done of {counts['submitted']}")
    if run.requests is not None:
        lines.append(f"tokens in / out: {tokens_total(run)}")
        if (unverified := unverified_sizes(run)) is not None:
            lines.append(unverified)
    lines += _cost_lines(run)
    lines += _capacity_lines(run)
    lines += _verdict_lines(run)
    if (loadgen := loadgen_capacity(run, run_validity(run))) is not None:
        lines.append(loadgen.line())
    lines += [f"missing: {m}" for m in run.missing] + [f"missing: {g}" for g in record_gaps(run)]
    lines.append(f"exit code: {run.meta.get('exit_code', NOT_RECORDED)}   run directory: {run.path}")
    return "\n".join(lines)


def record_gaps(run: RunData) -> list[str]:
    """What the run did not record to its end: samples cut short by the sampler's death, requests and
    tasks cut short by the run's stop."""
    gaps = []
    sampler = run.meta.get("sampler") or {}
    if sampler.get("stopped_reason"):
        at = sampler.get("stopped_at_s")
        where = f"after {at} s" if at is not None else "before the first sample"
        gaps.append(f"samples stop {where}: sampler died ({sampler['stopped_reason']})")
    req, tasks = run.requests, run.tasks
    if (
        req is not None
        and REQUEST.error_kind in req
        and (cut := int((req[REQUEST.error_kind] == schema.ERROR_INTERRUPTED).sum()))
    ):
        gaps.append(f"{cut} requests cut short by the run's stop (error_kind interrupted)")
    if (
        tasks is not None
        and "status" in tasks
        and (open_ := int((tasks["status"] == TASK_STATUS.unfinished).sum()))
    ):
        gaps.append(f"{open_} tasks unfinished when the run stopped")
    return gaps


def _cost_lines(run: RunData) -> list[str]:
    """LLM dollars at the run's price table, else as the gateway reported them; n/a rather than a guess."""
    source = usage_rows(run)[1]
    if source == "none":
        return []
    table = run_prices(run)
    if isinstance(table, PriceTableError):
        return [f"LLM cost: n/a ({table})"]
    priced = priced_usage(run, table)[0]
    fictional = fictional_models(priced["model"], table)
    made_up = f"; FICTIONAL entries: {', '.join(fictional)}" if fictional else ""
    line = describe_total(dollar_total(priced))
    return [f"{line} (usage from {source}; prices {Path(table.origin).name}{made_up})"]


def _capacity_lines(run: RunData) -> list[str]:
    """The capacity study's headline: N_max with the fit behind it, or why no capacity is published."""
    frame = run.capacity
    if frame is None or not has_rows(frame):
        return []
    if is_churn(frame):
        churn = run_churn(run)
        fit = churn.fit
        detail = f" (R² {fit.r2:.3f}, {fit.points} points)" if fit else ""
        retained = churn.retained_mib_per_session
        figure = f"retained {retained:,.3f} MiB per closed session{detail}, " if retained is not None else ""
        lines = [f"churn: {churn.verdict}; {figure}{churn.sessions_closed} sessions closed"]
        lines.append(f"churn: kept above the baseline after each cycle: {kept_text(churn.kept_mib)}")
        return lines + ([f"churn: {churn.suggestion}"] if churn.suggestion else [])
    r = run_capacity(run)
    marginal = (
        f"{r.fit.slope:.3f} MiB/agent (R² {r.fit.r2:.4f}, last {r.fit.points} points)" if r.fit else "no fit"
    )
    n_max = f"N_max {r.n_max} (N_stop {r.n_stop})" if r.n_max is not None else "N_max not published"
    first = (
        f"first agent +{r.first_agent_mib:,.1f} MiB over a baseline of {r.baseline_mib:,.1f} MiB"
        if r.first_agent_mib is not None
        else "first agent: not measured (no agent was ready)"
    )
    mode = r.connection or "connection mode not recorded"
    startup = (
        f"start-up p50 {r.startup['p50']:,.0f} ms, p95 {r.startup['p95']:,.0f} ms ({mode})"
        if r.startup.get("n")
        else "start-up: no agent was ready"
    )
    lines = [
        f"capacity ({r.metric}, budget {r.budget_mib:,.1f} MiB): {n_max}, marginal {marginal}",
        f"{first}; {startup}; stop: {r.stop_reason}",
    ]
    warning = shared_pages_warning(r)
    return lines + r.notes[:2] + ([warning] if warning else [])


def _verdict_lines(run: RunData) -> list[str]:
    """Workers lost, failed thresholds with the value that broke them, thresholds left without a verdict
    (they fail the run unless --allow-unjudged), a load generator that was the bottleneck, and latency
    figures made suspect by its situation (analysis/validity.py)."""
    meta = run.meta
    lines = [f"WORKER LOST: {text}" for text in worker_losses(meta)]
    for t in meta.get("thresholds") or []:
        if t.get("passed") is False:
            value, n = t.get("value"), t.get("samples")
            lines.append(f"THRESHOLD FAILED: {t.get('expr')} (value {value:.4g}, n={n})")
        elif t.get("passed") is None:
            why = t.get("note") or "no data"
            if meta.get("allow_unjudged"):
                lines.append(f"threshold not judged ({why}), accepted by --allow-unjudged: {t.get('expr')}")
            else:
                fails = f"fails the run, exit code {THRESHOLDS_UNJUDGED}"
                lines.append(f"THRESHOLD NOT JUDGED ({why}): {t.get('expr')} ({fails})")
    validity = run_validity(run)
    if validity.valid is False:
        lines.append(f"RUN INVALID: {SATURATION_RULE} (p90 {validity.checks[0].value} %)")
        lines.append(f"  {SATURATION_REMEDY}")
    if (suspect := validity.line()) is not None:
        lines.append(suspect)
    return lines


def _memory_lines(run: RunData) -> list[str]:
    """Peak target memory; in a capacity run the driver's per-step readings are the figure (the 1 Hz
    sampler may read between steps, or before the last one), the sampler's beside it. With several
    hosts, those of the judged one (the first sampler service's). A target read 0 throughout is said so.
    """
    s, unread = judged_samples(run), target_unread_line(run)  # read 0 throughout: not measured, not 0 MiB
    sampled = s[SAMPLE.target_rss_bytes].max() if s is not None and not s.empty else float("nan")
    sampled = float("nan") if unread is not None else sampled
    host = (
        f"   min host available: {_mib(s[SAMPLE.host_available_bytes].min())}"
        if s is not None and not s.empty
        else ""
    )
    steps = _capacity_peak_bytes(run)
    if steps is not None:
        beside = f" (1 Hz sampler: {_mib(sampled)}, read between steps)" if not pd.isna(sampled) else ""
        return [f"peak target RSS: {_mib(steps)} at the capacity steps{beside}{host}"]
    if s is None or s.empty:
        return ["memory: no samples recorded"]
    if unread is not None:
        return [f"peak target RSS: not measured{host}", unread]
    return [f"peak target RSS: {_mib(sampled)}{host}"]


def _capacity_peak_bytes(run: RunData) -> float | None:
    """The driver's highest reading: of every churn row (its batches opened and closed: none is a capacity
    step, whose only point is the baseline), or of the capacity steps."""
    frame = run.capacity
    if frame is None or not has_rows(frame):
        return None
    if is_churn(frame):
        peak = memory_column(frame, "rss").max()
        return None if pd.isna(peak) else float(peak) * MIB
    points = capacity_points(frame, "rss")
    return float(points["mib"].max()) * MIB if len(points) else None


def _mib(value: float) -> str:
    return NOT_RECORDED if pd.isna(value) else f"{value / MIB:,.1f} MiB"


def _latency_lines(run: RunData, top: int = 4) -> list[str]:
    """Latency per operation (the most frequent few: a poll and a stream do not share a percentile),
    then TTFT over all streams; each with its sample count and small-sample flag."""
    req = run.requests
    if req is None or req.empty:
        return ["latency: no requests recorded"]
    R = schema.REQUEST
    ok = req.loc[req[R.ok] == 1, [R.operation, R.ttft_ms, *(c for c in SCORE_INPUTS if c in req)]]
    operations = ok["operation"].value_counts().index
    shown = f" (top {top} of {len(operations)} operations; all in report.md)" if len(operations) > top else ""
    lines = [f"latency of {len(ok)} successful requests, by operation{shown}:"]
    for operation in operations[:top]:
        lines.append(
            _percentile_line(f"  {operation}", ok.loc[ok["operation"] == operation, REQUEST.latency_ms])
        )
    if ok[REQUEST.ttft_ms].notna().any():
        lines.append(_percentile_line("TTFT", ok[REQUEST.ttft_ms]))
    tpot = with_scores(ok)[TPOT_MS]
    if tpot.notna().any():
        lines.append(_percentile_line("TPOT", tpot, digits=1))  # tens of ms: 20.3 is not 20.9
    elif ok[REQUEST.ttft_ms].notna().any():
        lines.append(f"TPOT: {tpot_absent(ok)}")
    return lines


def _goodput_lines(run: RunData) -> list[str]:
    """Goodput of requests and tasks with their counts and rate, and the SLOs they were judged on."""
    found = goodput(run)
    if found is None:
        return []
    parts = [
        f"{share.share * 100:.1f} % of {share.scored:,} {what} ({share.met:,}"
        + (f", {share.per_s:.2f}/s" if share.per_s else "")
        + ")"
        for what, share in (("requests", found.requests), ("tasks", found.tasks))
        if share.scored and share.share is not None
    ]
    judged = "; ".join(parts) if parts else "nothing scored (no request measures every SLO's metric)"
    return [f"goodput: {judged} met every SLO: {'; '.join(s['expr'] for s in found.slos)}"]


def _percentile_line(label: str, values: pd.Series, digits: int = 0) -> str:
    d = describe(values, percentiles=(50, 95))
    flag = f"  [{d['small_sample']}]" if d["small_sample"] else ""
    return f"{label}: p50 {d['p50']:,.{digits}f} ms, p95 {d['p95']:,.{digits}f} ms (n={d['n']}){flag}"
