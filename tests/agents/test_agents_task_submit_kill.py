"""A task agent killed while its submit is at the gateway (a stop that kills an agent as it wakes into its
next task, a second Ctrl-C): the task the gateway made is not lost. Its row says unfinished and the
agent's stop archives it.

Truth: the simulator's board, read back by an independent client. The simulator is frozen (SIGSTOP) while
the submit waits in its socket, so the kill lands mid-request every time.
"""

from __future__ import annotations

import gevent
import httpx
import pytest
from gevent import GreenletExit

from agents.gateways.task_board import TaskAgent
from contract import schema
from tests.fault_runs import freeze, gateway_tasks, thaw
from tests.gateways.harness import RUN_ID, agent_user, rows
from tests.locust_runs import wait_for

pytestmark = pytest.mark.e2e


def bytes_waiting_at(port: int) -> bool:
    """A connection to 127.0.0.1:port holds bytes its server has not read (/proc/net/tcp's rx_queue)."""
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            local, _remote, state, queues = line.split()[1:5]
            if local.endswith(f":{port:04X}") and state == "01" and int(queues.split(":")[1], 16) > 0:
                return True
    return False


def test_a_task_agent_killed_mid_submit_keeps_its_task_as_an_unfinished_row_and_archives_it(
    simulator, tmp_path
):
    gateway = simulator("--task-seconds", "30")
    port = httpx.URL(gateway.url).port
    assert port is not None
    with agent_user(TaskAgent, gateway.url, tmp_path, poll_interval=0.1, task_timeout=60.0) as user:
        freeze(gateway.pid)
        try:
            worker = gevent.spawn(user.run_task, None)
            wait_for(lambda: bytes_waiting_at(port), 10, "the submit waiting at the frozen gateway")
            worker.kill(block=False)
            gevent.sleep(0.2)  # the kill delivered: without the shield it cuts the submit here
        finally:
            thaw(gateway.pid)
        worker.join(10)
        assert worker.ready() and isinstance(worker.value, GreenletExit)
    board = gateway_tasks(gateway.url, RUN_ID)
    tasks = rows(tmp_path, schema.TASKS_CSV)
    assert [t["task_id"] for t in tasks] == [b["id"] for b in board], (tasks, board)
    assert tasks[0]["status"] == schema.TASK_STATUS.unfinished and board[0]["status"] == "archived"
