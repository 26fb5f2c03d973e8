"""One capacity step's memory reading of a target: the median of n readings right after a refresh
(the study), PSS/USS once, a sidecar apart. Used in-process by the capacity driver and, remotely, by the
sampler service's `/v1/reading`. Reads processes; writes nothing.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sampler.targets import Target

READINGS_PER_STEP = 3  # the capacity study: the median of 3 readings after each agent


@dataclass(frozen=True)
class MemoryReading:
    """One step's memory in bytes: RSS and procs are medians of n readings, PSS/USS one reading."""

    rss_bytes: int
    pss_bytes: int | None
    uss_bytes: int | None
    procs: int
    sidecar_rss_bytes: int | None
    alive: bool


class MemoryProbe:
    """Reads the target's process memory (and a sidecar's, apart) from outside, median of n readings."""

    def __init__(self, target: Target, sidecar: Target | None, readings: int = READINGS_PER_STEP) -> None:
        self.target = target
        self.sidecar = sidecar
        self.readings = readings

    def read(self, with_pss: bool = True) -> MemoryReading:
        self.target.refresh()  # new worker processes appear only at a refresh
        # PSS costs ~1 ms per process (smaps_rollup), so it is read once per step; RSS (statm) n times
        got = [self.target.read(with_pss=with_pss and i == 0) for i in range(self.readings)]
        return MemoryReading(
            rss_bytes=int(statistics.median(r.rss_bytes for r in got)),
            pss_bytes=_median([r.pss_bytes for r in got]),
            uss_bytes=_median([r.uss_bytes for r in got]),
            procs=int(statistics.median(r.procs for r in got)),
            sidecar_rss_bytes=self._sidecar_rss(),
            alive=self.target.alive,
        )

    def _sidecar_rss(self) -> int | None:
        if self.sidecar is None:
            return None
        self.sidecar.refresh()
        return self.sidecar.read().rss_bytes

    def close(self) -> None:
        for target in (self.target, self.sidecar):
            if target is not None:
                target.close()


def _median(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return int(statistics.median(known)) if known else None
