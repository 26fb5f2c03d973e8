"""The locustfile benchmarks/bench_stream_cpu.py runs: examples/closed_loop.py's agent, with every garbage
collection of the process timed (gc.callbacks: a call at each start and stop, nothing per object) and
written at exit to the file BENCH_GC_LOG names, one JSON line each: [epoch time, generation, ms, objects
collected]. A full collection holds the event loop, so every stream's next token waits for it.
"""

import atexit
import gc
import json
import os
import time

from examples.closed_loop import *  # noqa: F403 - the kit's locustfile and the closed-loop agent

_started: list[float] = []
_collections: list[list[float]] = []


def _timed(phase: str, info: dict) -> None:
    if phase == "start":
        _started[:] = [time.perf_counter()]
    elif _started:
        ms = (time.perf_counter() - _started[0]) * 1000.0
        _collections.append([time.time(), info["generation"], round(ms, 3), info["collected"]])


@atexit.register
def _write() -> None:
    if path := os.environ.get("BENCH_GC_LOG"):
        with open(path, "w") as out:
            out.writelines(json.dumps(c) + "\n" for c in _collections)


gc.callbacks.append(_timed)
