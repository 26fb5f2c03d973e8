"""Client of the sampler service (`python -m sampler serve`): its clock and its rows since a cursor.

Talks HTTP and turns replies into records; every failure is one ServiceError line. It never writes a
file, never shifts a timestamp (the caller applies the clock offset) and never logs the token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx

from sampler.memory_probe import MemoryReading

CLOCK_PROBES = 5
TIMEOUT_S = 2.0


class ServiceError(Exception):
    """The service did not answer usefully; the message is one line without the token."""


@dataclass(frozen=True)
class ClockOffset:
    """The service's clock minus ours, from the round trip with the smallest delay (NTP's rule)."""

    at_ts: float  # our time of the measurement
    offset_s: float  # add to our time to get the service's; subtract from its timestamps to get ours
    rtt_s: float  # the round trip it was taken from: the offset is exact to within half of it


def best_offset(probes: list[tuple[float, float, float]]) -> ClockOffset:
    """(sent, service's time, received) triples -> the offset of the fastest round trip, assuming the
    service read its clock half-way."""
    sent, theirs, received = min(probes, key=lambda p: p[2] - p[0])
    middle = (sent + received) / 2
    return ClockOffset(at_ts=middle, offset_s=theirs - middle, rtt_s=received - sent)


@dataclass(frozen=True)
class RowsPage:
    boot: str  # changes when the service restarts (row numbers start again at 0)
    host: str
    interval_s: float
    stopped: str | None  # why the service stopped sampling, if it did
    first: int
    next: int
    lost: int  # rows asked for that the service no longer kept
    rows: list[dict[str, str]]


class ServiceClient:
    def __init__(self, url: str, token: str, clock: Callable[[], float], timeout_s: float = TIMEOUT_S):
        self.url = url.rstrip("/")
        self._clock = clock
        self._client = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {token}"})

    def clock_offset(self, probes: int = CLOCK_PROBES) -> ClockOffset:
        triples = []
        for _ in range(probes):
            sent = self._clock()
            theirs = float(self._get("/v1/clock", {})["ts"])
            triples.append((sent, theirs, self._clock()))
        return best_offset(triples)

    def rows(self, since: int, limit: int = 1000) -> RowsPage:
        doc = self._get("/v1/rows", {"since": since, "limit": limit})
        try:
            columns = doc["columns"]
            return RowsPage(
                boot=str(doc["boot"]),
                host=str(doc["host"]),
                interval_s=float(doc["interval_s"]),
                stopped=doc["stopped"],
                first=int(doc["first"]),
                next=int(doc["next"]),
                lost=int(doc["lost"]),
                rows=[dict(zip(columns, cells, strict=True)) for cells in doc["rows"]],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ServiceError(f"{self.url}: not a sampler service reply ({type(exc).__name__})") from None

    def reading(self, with_pss: bool) -> MemoryReading:
        """A capacity step's reading of the service's target, taken now (median of 3 on that host)."""
        doc = self._get("/v1/reading", {"pss": int(with_pss)})
        try:
            return MemoryReading(**doc)
        except TypeError:
            raise ServiceError(f"{self.url}/v1/reading: not a memory reading") from None

    def close(self) -> None:
        self._client.close()

    def _get(self, path: str, params: dict) -> dict:
        try:
            response = self._client.get(self.url + path, params=params)
        except httpx.HTTPError as exc:
            detail = " ".join(str(exc).split())[:160]
            raise ServiceError(f"{self.url}: {type(exc).__name__}: {detail}") from None
        if response.status_code == 401:
            raise ServiceError(f"{self.url}: the service refused the token (HTTP 401)")
        if response.status_code != 200:
            raise ServiceError(f"{self.url}{path}: HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise ServiceError(f"{self.url}{path}: reply is not JSON") from None


class RemoteMemoryProbe:
    """The capacity driver's memory probe, read through a sampler service (same read/close as
    sampler.memory_probe.MemoryProbe); a failure is a ServiceError."""

    def __init__(self, client: ServiceClient) -> None:
        self.client = client

    def read(self, with_pss: bool) -> MemoryReading:
        return self.client.reading(with_pss)

    def close(self) -> None:
        self.client.close()
