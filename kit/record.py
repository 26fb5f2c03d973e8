"""A run's record as it is written: run.json (rewritten whole at each change), the profile's phases on
the time axis, users.csv, and every write into the run directory guarded by the disk guard (a failed
write stops the run with DISK_ERROR: disk full, I/O error).

Writes and bookkeeping only: what goes into the record is decided by the run's parts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contract import schema
from contract.csv_append import CsvAppender, RunFileError
from kit import rundir
from kit.disk import DiskGuard

MCP_PROBE_SESSION = "mcp_probe_session"  # run.json: the MCP liveness probe's session open now (kit.cleanup)


class RunRecord:
    def __init__(
        self, run_dir: Path, meta: dict, disk: DiskGuard, on_disk_error: Callable[[str], None]
    ) -> None:
        """`on_disk_error(why)` is told of the first write that failed (the guard says it on stderr)."""
        self.run_dir = run_dir
        self.meta = meta
        self.disk = disk
        self.on_disk_error = on_disk_error
        self.phases: list[dict] = []
        self.users_csv = CsvAppender(run_dir / schema.USERS_CSV, schema.USER_COLUMNS)

    @property
    def samples_csv(self) -> Path:
        return self.run_dir / schema.SAMPLES_CSV

    def save(self) -> None:
        self.guarded(rundir.write_run_json, self.run_dir, self.meta)

    def note_mcp_probe(self, session_id: str | None) -> None:
        """run.json `mcp_probe_session`: the session the MCP liveness probe holds open on the server now
        (absent when none), saved at once: a run killed with it open leaves it for kit.cleanup."""
        if session_id:
            self.meta[MCP_PROBE_SESSION] = session_id
        elif self.meta.pop(MCP_PROBE_SESSION, None) is None:
            return
        self.save()

    def guarded(self, write, *args) -> None:
        """A write into the run directory; a failure (disk full) stops the run with DISK_ERROR."""
        try:
            write(*args)
        except RunFileError as exc:
            self.failed(exc)
        except OSError as exc:  # Locust's CSVs, written with open()
            self.failed(RunFileError(Path(exc.filename or self.run_dir), exc))

    def failed(self, error: RunFileError | str, said: bool = False) -> None:
        """A write failed (`said`: another process said so on stderr already)."""
        if self.disk.failed(error, said):
            self.on_disk_error(str(error))

    def note_phase(self, name: str, now: float) -> None:
        """The profile's phase now: a new one closes the last and is saved."""
        if self.phases and self.phases[-1]["name"] == name and self.phases[-1]["end_ts"] is None:
            return
        self.close_phase(now)
        self.phases.append({"name": name, "start_ts": now, "end_ts": None})
        self.meta.setdefault("profile", {})["phases"] = self.phases
        self.save()

    def close_phase(self, now: float) -> None:
        if self.phases and self.phases[-1]["end_ts"] is None:
            self.phases[-1]["end_ts"] = now

    def write_users(self, row: dict) -> None:
        """users.csv's row of this tick, on disk at once (the cockpit and a killed run read it)."""
        self.users_csv.write(row)
        self.guarded(self.users_csv.flush)
