"""Pulls the rows of sampler services on gateway hosts (`--sampler-url`, repeatable) into samples.csv, on
the load generator's time axis: the clock offset is measured at start and re-checked, kept in run.json
(`remote_samplers`), and subtracted from every remote timestamp. A service that stops answering leaves a
recorded gap (an empty row whose event says so, and the gap's span in run.json), never zeros.

Samples nothing itself; the HTTP side is sampler/service_client.py.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import gevent

from contract import schema
from contract.errors import InputError
from contract.redact import redact
from kit import input_checks
from sampler.csv_out import SampleWriter
from sampler.service_client import ClockOffset, RowsPage, ServiceClient, ServiceError

log = logging.getLogger("loadkit")
PULL_EVERY_S = 0.5  # rows reach the live judge within about this much of being taken
OFFSET_RECHECK_S = 30.0
END_CURSOR = 2**62  # "since the end": a page with no rows tells where the end is


class RemoteSampler:
    """One sampler service: its cursor, its clock offset, and the gap in progress, if any."""

    def __init__(self, client: ServiceClient, sink: SampleWriter, record: dict) -> None:
        self.client = client
        self.sink = sink
        self.record = record  # this service's entry in run.json's remote_samplers
        self.cursor = 0
        self.boot = ""
        self.offset: ClockOffset | None = None
        self.last_ts = time.time()
        self.gap: dict | None = None
        self.target_exited = False

    def connect(self) -> None:
        """Measure the clock offset and start at the service's newest row; ServiceError if it cannot."""
        self._measure_offset()
        page = self.client.rows(END_CURSOR, limit=0)
        if page.stopped:
            raise ServiceError(f"{self.client.url}: the service is not sampling any more ({page.stopped})")
        self.boot, self.cursor = page.boot, page.next
        self.record.update(host=page.host, interval_s=page.interval_s, boot=page.boot)

    def pull(self, now: float) -> bool:
        """Take in the rows since the cursor; True when run.json's record changed (offset, gap)."""
        try:
            changed = self._recheck_offset(now)
            page = self.client.rows(self.cursor)
        except ServiceError as exc:
            return self._open_gap(now, str(exc))
        changed |= self._close_gap(now)
        if page.boot != self.boot:  # restarted: row numbers start again; its rows from the first kept
            self.boot, self.cursor = page.boot, 0
            self.record["boot"] = page.boot
            self._measure_offset()
            return True
        if page.lost:
            resumed = self._local_ts(page.rows[0]) if page.rows else now
            self._note_gap(self.last_ts, resumed, "rows lost (the service kept fewer)", page)
            changed = True
        self._write(page)
        return changed

    def _write(self, page: RowsPage) -> None:
        for row in page.rows:
            row["ts"] = f"{self._local_ts(row):.3f}"
            self.sink.write({c: row.get(c, "") for c in schema.SAMPLE_COLUMNS})
            self.target_exited |= schema.SAMPLE_EVENT.target_exited in row.get("event", "").split("; ")
        if page.rows:
            self.last_ts = float(page.rows[-1]["ts"])
        self.cursor = page.next

    def _local_ts(self, row: dict[str, str]) -> float:
        return float(row["ts"]) - self.clock().offset_s

    def clock(self) -> ClockOffset:
        """The offset measured at start (and since re-checked); pulling before it is a bug."""
        if self.offset is None:
            raise RuntimeError("sampler service clock offset read before it was measured")
        return self.offset

    def _measure_offset(self) -> None:
        self.offset = self.client.clock_offset()
        self.record.setdefault("clock", []).append(_rounded(dataclasses.asdict(self.offset)))

    def _recheck_offset(self, now: float) -> bool:
        if now - self.clock().at_ts < OFFSET_RECHECK_S:
            return False
        self._measure_offset()
        return True

    def _open_gap(self, now: float, error: str) -> bool:
        if self.gap is not None:
            return False
        log.warning("loadkit: sampler service stopped answering, a gap in samples.csv: %s", error)
        self.gap = self._note_gap(self.last_ts, None, error)
        row = dict.fromkeys(schema.SAMPLE_COLUMNS, "")  # every reading empty: not measured, never zero
        row.update(
            ts=f"{now:.3f}",
            host=self.record.get("host", ""),
            event=f"{schema.SAMPLE_EVENT.sampler_gap}: {error}",
        )
        self.sink.write(row)
        return True

    def _close_gap(self, now: float) -> bool:
        if self.gap is None:
            return False
        self.gap["end_ts"] = round(now, 3)
        log.warning("loadkit: sampler service %s answers again", self.client.url)
        self.gap = None
        return True

    def _note_gap(self, start: float, end: float | None, why: str, page: RowsPage | None = None) -> dict:
        gap = {"start_ts": round(start, 3), "end_ts": None if end is None else round(end, 3), "why": why}
        if page is not None:
            gap["rows_lost"] = page.lost
        self.record.setdefault("gaps", []).append(gap)
        return gap


class RemoteSamplers:
    """Every --sampler-url of the run, pulled by one greenlet into one samples.csv writer."""

    def __init__(self, samplers: list[RemoteSampler], sink: SampleWriter, save: Callable[[], None]):
        self.samplers = samplers
        self.sink = sink
        self.save = save

    def pull(self) -> None:
        now = time.time()
        if any([s.pull(now) for s in self.samplers]):
            self.save()

    def run(self, closing: Callable[[], bool], on_target_exited: Callable[[str], None]) -> None:
        while not closing():
            gevent.sleep(PULL_EVERY_S)
            self.pull()
            for s in self.samplers:
                if s.target_exited:
                    on_target_exited(s.record.get("host", s.client.url))

    def close(self) -> None:
        """A last pull (the rows up to the end of the run), then close; an open gap stays open."""
        self.pull()
        for s in self.samplers:
            s.client.close()
        self.sink.close()


def start_remote_samplers(
    urls: list[str], token_env: str, samples_csv: Path, meta: dict, save: Callable[[], None]
) -> RemoteSamplers | None:
    """Connect to every service (bad input: InputError, one line) and open samples.csv for them."""
    if not urls:
        return None
    token = os.environ.get(token_env, "")
    if not token:
        raise InputError(f"--sampler-url needs the sampler service's token in ${token_env}")
    records = meta.setdefault("remote_samplers", [])
    samplers = []
    sink = SampleWriter(str(samples_csv))
    for url in urls:
        records.append({"url": redact(input_checks.http_url("--sampler-url", url)), "gaps": []})
        sampler = RemoteSampler(ServiceClient(url, token, time.time), sink, records[-1])
        try:
            sampler.connect()
        except ServiceError as exc:
            raise InputError(f"sampler service: {exc}") from None
        samplers.append(sampler)
    return RemoteSamplers(samplers, sink, save)


def _rounded(doc: dict) -> dict:
    return {k: round(v, 6) for k, v in doc.items()}
