"""The cockpit's live values in Prometheus text exposition format (version 0.0.4), for a Prometheus
scrape or Grafana: the same numbers as the JSON snapshot's "latest" and "thresholds".

Formatting only: values come from kit.live; nothing here reads files or the run.
"""

from __future__ import annotations

import math

PREFIX = "loadkit_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STATE_CODES = {"no data": -1, "ok": 0, "failing": 1, "aborted": 2}
_HELP = {
    "users": "simulated agents (Locust users) running",
    "target_users": "users the load profile asks for now",
    "requests_total": "requests.csv rows written so far in this run",
    "ttft_p50_ms": "time to first token, median of the newest window (ms)",
    "ttft_p95_ms": "time to first token, 95th percentile of the newest window (ms)",
    "tpot_p50_ms": "time per output token, median of the newest window (ms)",
    "tpot_p95_ms": "time per output token, 95th percentile of the newest window (ms)",
    "goodput_pct": "requests that met every --slo so far (%)",
}


def exposition(snapshot: dict) -> str:
    """Every value of snapshot["latest"] as a gauge labelled with the run id, then each threshold's
    state (-1 no data, 0 ok, 1 failing, 2 aborted) and its judged value."""
    run = _labels(run_id=snapshot["run"]["id"])
    lines: list[str] = []
    for name, value in sorted(snapshot["latest"].items()):
        metric = PREFIX + name
        kind = "counter" if name.endswith("_total") else "gauge"
        lines += [f"# HELP {metric} {_HELP.get(name, name.replace('_', ' '))}", f"# TYPE {metric} {kind}"]
        lines.append(f"{metric}{run} {_value(value)}")
    thresholds = snapshot["thresholds"]
    if thresholds:
        lines += [
            f"# HELP {PREFIX}threshold_state threshold state: -1 no data, 0 ok, 1 failing, 2 aborted the run",
            f"# TYPE {PREFIX}threshold_state gauge",
        ]
        lines += [
            f"{PREFIX}threshold_state{_labels(run_id=snapshot['run']['id'], expr=t['expr'])} "
            f"{STATE_CODES[t['state']]}"
            for t in thresholds
        ]
        lines += [
            f"# HELP {PREFIX}threshold_value the value the threshold compared (its metric's file unit)",
            f"# TYPE {PREFIX}threshold_value gauge",
        ]
        lines += [
            f"{PREFIX}threshold_value{_labels(run_id=snapshot['run']['id'], expr=t['expr'])} "
            f"{_value(t['value'])}"
            for t in thresholds
        ]
    return "\n".join(lines) + "\n"


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NaN"
    return repr(float(value))
