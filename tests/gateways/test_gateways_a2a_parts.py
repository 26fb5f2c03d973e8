"""The A2A agent's protocol reading, without a server: version from the agent card (1.0 interfaces vs a
0.3 top-level url), task states of both versions, and stream events of both shapes."""

from __future__ import annotations

from agents.gateways.a2a import apply_task as fold
from agents.gateways.a2a import card_interface, rpc_code, stream_item, task_of
from contract.records import TaskRecord


def test_card_with_a_jsonrpc_1_0_interface_selects_1_0_and_its_path():
    card = {
        "supportedInterfaces": [
            {"url": "http://h:1/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
    }
    assert card_interface(card, "/") == ("1.0", "/a2a/v1")


def test_card_of_a_0_3_server_selects_0_3_and_its_url_path():
    assert card_interface({"protocolVersion": "0.3.0", "url": "http://h:1/rpc"}, "/") == ("0.3", "/rpc")


def test_refusal_codes_are_read_from_the_rows_error_text():
    assert rpc_code("-32009 A2A version '0.3' is not supported") == -32009
    assert rpc_code("Internal Server Error") is None


def test_task_states_of_both_versions_end_the_row_the_same_way():
    for state, status in (("TASK_STATE_COMPLETED", "done"), ("completed", "done"), ("canceled", "cancelled"),
                          ("TASK_STATE_REJECTED", "failed"), ("input-required", "failed")):  # fmt: skip
        row = TaskRecord(task_id="t", agent_id="a")
        fold(row, {"status": {"state": state}})
        assert row.status == status and row.finished_ts is not None, state
    working = TaskRecord(task_id="t", agent_id="a")
    fold(working, {"status": {"state": "TASK_STATE_WORKING"}})
    assert working.status == "unfinished" and working.started_ts is not None


def test_results_and_stream_events_of_both_versions_are_recognised():
    task = {"id": "t1", "status": {"state": "submitted"}}
    assert task_of({"task": task}) == task and task_of({**task, "kind": "task"}) == {**task, "kind": "task"}
    assert task_of({"message": {"parts": []}}) is None
    assert stream_item({"artifactUpdate": {"taskId": "t1"}}) == ("artifact", {"taskId": "t1"})
    assert stream_item({"kind": "status-update", "taskId": "t1"})[0] == "status"
