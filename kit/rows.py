"""Routes agents' raw records into the run directory, locally or from Locust workers to the master.

Agents fire Locust's own `request` event with the raw record in `context["kit_record"]`, and hand
lifecycle rows to their run context (agents/run_context.py `record`), where this recorder registers.
On a local or master runner rows go straight to the CSV files; on a worker they are buffered and
shipped in `report_to_master`, and the master's `worker_report` handler writes them (the one
documented route for distributed runs). It never computes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gevent
from locust.env import Environment
from locust.event import EventHook
from locust.runners import WorkerRunner

from agents.run_context import context_of
from contract import schema
from contract.csv_append import CsvAppender, RunFileError
from contract.records import AgentRecord, RequestRecord, TaskRecord, as_row

FLUSH_EVERY_S = 1.0
_ROW_FILES = {
    RequestRecord: schema.REQUESTS_CSV,
    TaskRecord: schema.TASKS_CSV,
    AgentRecord: schema.AGENTS_CSV,
}


class RowRecorder:
    """Holds the run directory's row files for one Locust environment."""

    def __init__(
        self,
        environment: Environment,
        run_dir: Path | None,
        on_write_error: Callable[[RunFileError], None] | None = None,
    ):
        """`run_dir` None: buffer the rows for the master (a worker); `on_write_error`: told when a row
        file cannot be written (disk full), else the error is raised."""
        self.environment = environment
        self.run_dir = run_dir
        self._buffer: dict[str, list[dict]] = {}
        self._files: dict[str, CsvAppender] = {}
        self._flusher = None
        self.listeners: list = []  # callables (file_name, row) told of every row written here
        self.on_write_error = on_write_error
        context_of(environment).recorder = self  # the run's rows go here
        events = environment.events
        self._hooks: list[tuple[EventHook, Callable[..., None]]] = [(events.request, self._on_request)]
        if isinstance(environment.runner, WorkerRunner) or run_dir is None:
            self._hooks.append((events.report_to_master, self._on_report_to_master))
        else:
            self._hooks.append((events.worker_report, self._on_worker_report))
            self._flusher = gevent.spawn(self._flush_forever)
        for hook, listener in self._hooks:
            hook.add_listener(listener)

    @property
    def is_buffering(self) -> bool:
        return self.run_dir is None

    def record(self, record: RequestRecord | TaskRecord | AgentRecord) -> None:
        self._add(_ROW_FILES[type(record)], as_row(record))

    def rows_written(self, file_name: str) -> int:
        appender = self._files.get(file_name)
        return appender.rows_written if appender else 0

    def counts(self) -> dict[str, int]:
        """Rows written to each row file (a file with none was never created)."""
        return {name: self.rows_written(name) for name in _ROW_FILES.values()}

    def flush(self) -> None:
        for appender in list(self._files.values()):
            self._guarded(appender.flush)

    def close(self) -> None:
        """Flush and close the files and stop listening: a later run has a recorder of its own."""
        for hook, listener in self._hooks:
            hook.remove_listener(listener)
        self._hooks = []
        if self._flusher is not None:
            self._flusher.kill(block=False)
        for appender in list(self._files.values()):
            self._guarded(appender.close)

    def _add(self, file_name: str, row: dict) -> None:
        if self.is_buffering:
            self._buffer.setdefault(file_name, []).append(row)
        else:
            self._write(file_name, row)

    def _write(self, file_name: str, row: dict) -> None:
        if self._guarded(lambda: self._appender(file_name).write(row)) is False:
            return
        for listener in self.listeners:
            listener(file_name, row)

    def _guarded(self, action) -> bool:
        """Run a file action; a write error goes to `on_write_error` (False), or up when none is set."""
        try:
            action()
        except RunFileError as exc:
            if self.on_write_error is None:
                raise
            self.on_write_error(exc)
            return False
        return True

    def _appender(self, file_name: str) -> CsvAppender:
        if file_name not in self._files:
            assert self.run_dir is not None  # a buffering recorder (worker) writes no file
            columns = schema.FILES_COLUMNS[file_name]
            self._files[file_name] = CsvAppender(self.run_dir / file_name, columns)
        return self._files[file_name]

    def _on_request(self, context=None, **_kwargs) -> None:
        record = (context or {}).get("kit_record")  # set by the kit's agents only: a RequestRecord
        if record is not None:
            self.record(record)

    def _on_report_to_master(self, client_id, data) -> None:
        data["kit_rows"], self._buffer = self._buffer, {}

    def _on_worker_report(self, client_id, data) -> None:
        for file_name, rows in (data.get("kit_rows") or {}).items():
            if file_name in schema.FILES_COLUMNS:
                for row in rows:
                    self._write(file_name, row)

    def _flush_forever(self) -> None:
        while True:
            gevent.sleep(FLUSH_EVERY_S)
            self.flush()
