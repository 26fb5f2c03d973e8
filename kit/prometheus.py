"""The cockpit's live values in Prometheus text exposition format (version 0.0.4), for a Prometheus
scrape or Grafana: the same numbers as the JSON snapshot's "latest" and "thresholds", each labelled with
the run id, and `loadkit_run_active` saying whether the run's load is going.

Formatting only: values come from kit.live; nothing here reads files or the run.
"""

from __future__ import annotations

import math

from contract.schema import REQUEST, USER
from contract.units import unit_of
from kit.live import GAUGES, QUANTILES, WINDOW_S, Gauge

PREFIX = "loadkit_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STATE_CODES = {"no data": -1, "ok": 0, "failing": 1, "aborted": 2}
_WINDOW_OF = {
    REQUEST.ttft_ms: "time to first token",
    "tpot_ms": "time per output token after the first",
    REQUEST.latency_ms: "request latency",
}
_WINDOW = f"the newest {WINDOW_S:g}-second window of requests by send time"


def _gauge_help(gauge: Gauge) -> str:
    unit = "bytes" if unit_of(gauge.column) == "bytes" else gauge.unit  # the file's unit, not the chart's
    return f"{gauge.label} ({unit})" if unit else gauge.label


# Every family the kit exports: name (without the prefix) -> (type, help with the unit). Once a run has
# ended (its last row written) its gauges are dropped: Prometheus then marks them stale, so a dashboard
# shows them ending where the run did. Its counters stay, at their final values (ENDED_COUNTERS): the
# rows the stop-timeout let land come after the last scrape of a running run, and a counter that
# vanished there would end short of requests.csv.
FAMILIES: dict[str, tuple[str, str]] = {
    "run_active": ("gauge", "1 while the run's load is going, 0 before its start and once it has ended"),
    "run_exit_code": ("gauge", "the ended run's exit code (README: exit codes); absent while it runs"),
    "users": ("gauge", "simulated agents (Locust users) running"),
    USER.target_users: ("gauge", "users the load profile asks for now"),
    "agents_open": ("gauge", "capacity and churn: agent sessions open (their driver is one Locust user)"),
    "requests_total": ("counter", "requests.csv rows written so far in this run"),
    "errors_total": ("counter", "failed requests so far (not counting those the run's own stop cut short)"),
    **{g.column: ("gauge", _gauge_help(g)) for g in GAUGES},
    **{
        f"{column.removesuffix('_ms')}_p{label}_ms": ("gauge", f"{what}, p{label} over {_WINDOW} (ms)")
        for column, what in _WINDOW_OF.items()
        for label, _ in QUANTILES
    },
    **{
        f"{column.removesuffix('_ms')}_window_samples": (
            "gauge",
            f"requests with a {what} in {_WINDOW}: the percentiles' sample count",
        )
        for column, what in _WINDOW_OF.items()
    },
    "goodput": ("gauge", "with --slo: the share (0-1) of scored requests that met every SLO so far"),
    "threshold_state": ("gauge", "threshold state: -1 no data, 0 ok, 1 failing, 2 aborted the run"),
    "threshold_value": ("gauge", "the value the threshold compared (its metric's file unit: ms, bytes...)"),
}


ENDED_COUNTERS = ("requests_total", "errors_total")


def exposition(snapshot: dict) -> str:
    """`loadkit_run_active`; while the run has not ended, every value of snapshot["latest"] and each
    threshold's state and judged value; once it has, its exit code and final counters instead."""
    run = snapshot["run"]
    labels = _labels(run_id=run["id"])
    lines = _family("run_active", [(labels, 1.0 if run["active"] else 0.0)])
    if run["ended"]:
        if run["exit_code"] is not None:
            lines += _family("run_exit_code", [(labels, float(run["exit_code"]))])
        for name in ENDED_COUNTERS:
            lines += _family(name, [(labels, snapshot["latest"][name])])
        return "\n".join(lines) + "\n"
    for name, value in sorted(snapshot["latest"].items()):
        lines += _family(name, [(labels, value)])
    thresholds = snapshot["thresholds"]
    if thresholds:
        by_expr = [(_labels(run_id=run["id"], expr=t["expr"]), t) for t in thresholds]
        lines += _family("threshold_state", [(lab, float(STATE_CODES[t["state"]])) for lab, t in by_expr])
        lines += _family("threshold_value", [(lab, t["value"]) for lab, t in by_expr])
    return "\n".join(lines) + "\n"


def _family(name: str, samples: list[tuple[str, float | None]]) -> list[str]:
    kind, text = FAMILIES.get(name, ("gauge", name.replace("_", " ")))
    metric = PREFIX + name
    return [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"] + [
        f"{metric}{labels} {_value(value)}" for labels, value in samples
    ]


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NaN"
    return repr(float(value))
