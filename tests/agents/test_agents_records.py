"""The agents' row records and the run-directory schema agree column for column."""

import dataclasses

from contract import schema
from contract.records import AgentRecord, RequestRecord, TaskRecord, as_row


def test_record_fields_are_exactly_the_schema_columns():
    for record, columns in (
        (RequestRecord, schema.REQUEST_COLUMNS),
        (TaskRecord, schema.TASK_COLUMNS),
        (AgentRecord, schema.AGENT_COLUMNS),
    ):
        assert tuple(f.name for f in dataclasses.fields(record)) == columns


def test_task_durations_derive_from_known_timestamps_only():
    row = TaskRecord(task_id="t", agent_id="a", submitted_ts=100.0, started_ts=102.5)
    row.fill_durations()
    assert row.queue_wait_ms == 2500.0
    assert row.run_ms is None and row.total_ms is None


def test_rows_write_booleans_as_integers():
    row = as_row(RequestRecord(ts=1.0, agent_id="a", operation="chat", ok=False))
    assert row["ok"] == 0
