"""The target's resources, live in Locust's web UI: a "Resources" tab fed from samples.csv.

Uses Locust's documented web UI extension points (template_args' extended tabs/tables and extra data on
/stats/requests, as in Locust's extend_web_ui example); reads the sampler's file, never the target.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

from contract import schema
from contract.csv_tail import CsvTail

TAB_KEY = "loadkit-resources"
WEB_HOST = "127.0.0.1"  # the kit's default for Locust's --web-host (Locust's own: all interfaces)
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
log = logging.getLogger("loadkit")


@dataclass(frozen=True)
class Gauge:
    column: str
    label: str
    scale: float  # divide the file's value by this for display
    unit: str
    worst: str  # "max" or "min": which extreme the peak column keeps


GAUGES = (
    Gauge("target_rss_bytes", "target RSS", schema.MIB, "MiB", "max"),
    Gauge("target_pss_bytes", "target PSS", schema.MIB, "MiB", "max"),
    Gauge("target_procs", "target processes", 1, "", "max"),
    Gauge("target_cpu_pct", "target CPU", 1, "% of a core", "max"),
    Gauge("host_available_bytes", "host available memory", schema.MIB, "MiB", "min"),
    Gauge("host_swap_used_bytes", "host swap used", schema.MIB, "MiB", "max"),
    Gauge("host_cpu_pct", "host CPU", 1, "%", "max"),
    Gauge("load1", "load average (1 min)", 1, "", "max"),
    Gauge("queue_length", "gateway queue length", 1, "", "max"),
    Gauge("in_progress", "gateway in progress", 1, "", "max"),
    Gauge("loadgen_cpu_pct", "load generator CPU", 1, "% of a core", "max"),
)


class LiveResources:
    """Latest reading and worst value so far of each gauge, from the rows the sampler appended."""

    def __init__(self, samples_csv: Path):
        self.tail = CsvTail(samples_csv)
        self.latest: dict[str, float] = {}
        self.worst: dict[str, float] = {}

    def update(self) -> None:
        for row in self.tail.new_rows():
            for gauge in GAUGES:
                value = _number(row.get(gauge.column))
                if value is None:
                    continue
                self.latest[gauge.column] = value
                pick = max if gauge.worst == "max" else min
                self.worst[gauge.column] = pick(value, self.worst.get(gauge.column, value))

    def table(self) -> list[dict[str, str]]:
        self.update()
        return [
            {
                "name": f"{g.label} ({g.unit})" if g.unit else g.label,
                "now": _shown(self.latest.get(g.column), g.scale),
                "worst": f"{g.worst} {_shown(self.worst.get(g.column), g.scale)}",
            }
            for g in GAUGES
            if g.column in self.latest
        ]


def install(web_ui, samples_csv: Path) -> LiveResources:
    """Add the Resources tab to Locust's web UI and feed it with every stats poll."""
    live = LiveResources(samples_csv)
    web_ui.template_args["extended_tabs"] = [{"title": "Resources", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {
            "key": TAB_KEY,
            "structure": [
                {"key": "name", "title": "Gauge"},
                {"key": "now", "title": "Now"},
                {"key": "worst", "title": "Worst so far"},
            ],
        }
    ]

    @web_ui.app.after_request
    def _add_resources(response):
        from flask import request  # Locust's web UI is Flask; imported only when the UI runs

        if request.path != "/stats/requests" or not response.is_json:
            return response
        payload = {**response.json, "extended_stats": [{"key": TAB_KEY, "data": live.table()}]}
        response.set_data(json.dumps(payload))
        return response

    return live


def warn_if_exposed(web_host: str) -> None:
    """The kit binds the web UI to 127.0.0.1 (kit/options.py); say so loudly when told otherwise."""
    if web_host not in LOOPBACK:
        log.warning(
            "loadkit: the web UI listens on %s, reachable from other machines, with no authentication "
            "unless --web-login/--web-auth is set: anyone who reaches it can start load",
            web_host or "all interfaces",
        )


def _number(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _shown(value: float | None, scale: float) -> str:
    return "—" if value is None else f"{value / scale:,.1f}"
