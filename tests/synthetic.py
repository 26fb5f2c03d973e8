"""Synthetic run directories with known answers, for the tests and the analysis benchmark.

Generators return frames in contract columns; write_run_dir is the only writer. Not used by real runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contract import schema
from contract.schema import GIB, MIB

T0 = 1_796_000_000.0


def write_run_dir(path: Path, meta: dict | None = None, **frames: pd.DataFrame) -> Path:
    """Write run.json and any of samples/requests/tasks/agents (keyword = file stem) in contract order."""
    path.mkdir(parents=True, exist_ok=True)
    if meta is not None:
        (path / schema.RUN_JSON).write_text(json.dumps(meta))
    for stem, frame in frames.items():
        name = f"{stem}.csv"
        frame.reindex(columns=list(schema.FILES_COLUMNS[name])).to_csv(path / name, index=False)
    return path


def soak_samples(
    duration_s: float,
    interval_s: float = 1.0,
    leak_mib_per_h: float = 0.0,
    noise_mib: float = 5.0,
    seed: int = 0,
    t0: float = T0,
) -> pd.DataFrame:
    """Sampler rows: target RSS 300 MiB + a planted linear leak + Gaussian noise; host facts steady."""
    rng = np.random.default_rng(seed)
    elapsed = np.arange(0.0, duration_s, interval_s)
    n = elapsed.size
    rss_mib = 300 + leak_mib_per_h * elapsed / 3600 + rng.normal(0, noise_mib, n)
    return pd.DataFrame(
        {
            "ts": t0 + elapsed,
            "elapsed_s": elapsed,
            "target_alive": 1,
            "target_procs": 3,
            "target_rss_bytes": (rss_mib * MIB).round(),
            "target_cpu_pct": rng.uniform(5, 30, n),
            "host_available_bytes": 3 * GIB - rss_mib * MIB,
            "host_swap_used_bytes": 100 * MIB,
            "host_cpu_pct": rng.uniform(10, 40, n),
            "load1": 0.5,
            "queue_length": rng.integers(0, 3, n),
            "in_progress": 2,
            "loadgen_cpu_pct": rng.uniform(5, 20, n),
        }
    )


def stepped_leak_samples(
    duration_s: float, leak_mib_per_h: float, step_mib: float, seed: int
) -> pd.DataFrame:
    """soak_samples of a leaker that allocates `step_mib` at a time, when its work comes (gamma-spaced,
    shape 4, at the mean rate the leak asks): RSS holds between steps, as a sampler reads it."""
    frame = soak_samples(duration_s, 1.0, noise_mib=0.0, seed=seed)
    rng = np.random.default_rng(seed)
    mean_gap_s = 3600.0 * step_mib / leak_mib_per_h
    steps = np.cumsum(rng.gamma(4.0, mean_gap_s / 4.0, int(3 * duration_s / mean_gap_s) + 10))
    held = np.searchsorted(steps, frame["elapsed_s"].to_numpy(), side="right") * step_mib
    return frame.assign(target_rss_bytes=((300 + held) * MIB).round())


def stream_requests(
    n: int, duration_s: float, users: int = 10, error_rate: float = 0.01, seed: int = 0, t0: float = T0
) -> pd.DataFrame:
    """chat.stream rows spread over the run: lognormal latency around 800 ms, TTFT around 200 ms."""
    rng = np.random.default_rng(seed)
    ok = rng.random(n) >= error_rate
    ttft = rng.lognormal(np.log(200), 0.3, n)
    latency = ttft + rng.lognormal(np.log(600), 0.3, n)
    return pd.DataFrame(
        {
            "ts": np.sort(t0 + rng.uniform(0, duration_s, n)),
            "agent_id": rng.integers(0, users, n).astype(str),
            "operation": "chat.stream",
            "ok": ok.astype(int),
            "status_code": np.where(ok, 200, 503),
            "error_kind": np.where(ok, "", "http_5xx"),
            "error": np.where(ok, "", "503 Service Unavailable"),
            "latency_ms": latency,
            "ttft_ms": np.where(ok, ttft, np.nan),
            "itl_ms_mean": 20.0,
            "itl_ms_max": 60.0,
            "chunks": 30,
            "tokens_in": 500,
            "tokens_cached": 100,
            "tokens_out": 30,
            "model": "sim-1",
        }
    )


def rounds_run(path: Path, per_round_s: float = 120.0, worker_mib: float = 170.0) -> Path:
    """A run shaped like the rounds study: baseline phase, rounds of 6, 8, 10 tasks, one worker process a
    task."""
    meta: dict[str, Any] = {
        "run_id": "synthetic-rounds",
        "profile": {"name": "rounds", "phases": [], "rounds": []},
        "start_ts": T0,
        "stop_reason": "profile complete",
        "exit_code": 0,
    }
    samples, tasks, t = [], [], T0
    meta["profile"]["phases"].append({"name": "baseline", "start_ts": t, "end_ts": t + 30})
    samples.append(_round_samples(t, 30, 0, worker_mib))
    t += 30
    for i, conc in enumerate((6, 8, 10), start=1):
        meta["profile"]["rounds"].append(
            {"round": i, "concurrency": conc, "start_ts": t, "end_ts": t + per_round_s}
        )
        samples.append(_round_samples(t, per_round_s, conc, worker_mib))
        tasks += [
            {
                "task_id": f"r{i}-{k}",
                "round": i,
                "submitted_ts": t,
                "started_ts": t + 1,
                "finished_ts": t + 91,
                "status": "done",
                "queue_wait_ms": 1000,
                "run_ms": 90000,
                "total_ms": 91000,
            }
            for k in range(conc)
        ]
        t += per_round_s
    meta["end_ts"] = t
    return write_run_dir(path, meta, samples=pd.concat(samples), tasks=pd.DataFrame(tasks))


def _round_samples(t0: float, duration_s: float, workers: int, worker_mib: float) -> pd.DataFrame:
    """Readings where `workers` processes of worker_mib each run on top of a 400 MiB gateway."""
    elapsed = np.arange(0.0, duration_s, 1.0)
    rss = (400 + workers * worker_mib) * MIB
    return pd.DataFrame(
        {
            "ts": t0 + elapsed,
            "target_procs": 1 + workers,
            "target_rss_bytes": rss,
            "host_available_bytes": 4 * GIB - rss - GIB,
            "host_swap_used_bytes": 0.0,
            "queue_length": max(workers - 6, 0),
            "in_progress": min(workers, 6),
        }
    )
