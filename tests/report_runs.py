"""Recorded run directories, one per profile, with known answers (tests/synthetic.py and the capacity
tests' generators), for the report, index and browser tests. Not a test module itself."""

from __future__ import annotations

from pathlib import Path

from tests.analysis.test_capacity_analysis import churn_frame, synthetic_run
from tests.synthetic import T0, rounds_run, soak_samples, stream_requests, write_run_dir

LOAD_PROFILES = ("smoke", "average", "stress", "spike")
PROFILES = (*LOAD_PROFILES, "breakpoint", "soak", "capacity", "churn", "rounds")
THRESHOLDS = [
    {"expr": "ttft_ms p95 < 500", "passed": True, "value": 333.0, "samples": 2966},
    {"expr": "error_rate < 0.001", "passed": False, "value": 0.011, "samples": 3000},
]
BREAK = {
    "t_s": 62.0,
    "ts": T0 + 62,
    "planned_users": 12,
    "running_users": 12,
    "threshold": "ttft_ms p95 < 500",
}


def meta(profile: str, run_id: str | None = None, t0: float = T0, duration_s: float = 600.0, **extra) -> dict:
    phases = [
        {"name": "ramp-up", "start_ts": t0, "end_ts": t0 + duration_s * 0.1},
        {"name": "plateau", "start_ts": t0 + duration_s * 0.1, "end_ts": t0 + duration_s * 0.9},
        {"name": "ramp-down", "start_ts": t0 + duration_s * 0.9, "end_ts": t0 + duration_s},
    ]
    return {
        "run_id": run_id or profile,
        "start_ts": t0,
        "end_ts": t0 + duration_s,
        "stop_reason": "profile complete",
        "exit_code": 0,
        "target": {"url": "http://127.0.0.1:8000", "gateway": "simulator"},
        "profile": {"name": profile, "phases": phases},
        **extra,
    }


def recorded_run(path: Path, profile: str, t0: float = T0, leak_mib_per_h: float = 120.0) -> Path:
    """A run directory of `profile`, written the way the kit writes one."""
    if profile == "rounds":
        return rounds_run(path)
    if profile in ("capacity", "churn"):
        write_run_dir(path, meta(profile, path.name, t0=t0, duration_s=300))
        frame = synthetic_run() if profile == "capacity" else churn_frame()
        frame.to_csv(path / "capacity.csv", index=False)
        return path
    if profile == "soak":
        samples = soak_samples(3600, interval_s=5, leak_mib_per_h=leak_mib_per_h, t0=t0)
        return write_run_dir(path, meta("soak", path.name, t0=t0, duration_s=3600), samples=samples)
    requests = stream_requests(3000, 600, t0=t0).assign(model="sim-model")
    extra = {"thresholds": THRESHOLDS} | ({"breakpoint": BREAK} if profile == "breakpoint" else {})
    return write_run_dir(
        path, meta(profile, path.name, t0=t0, **extra), samples=soak_samples(600, t0=t0), requests=requests
    )
