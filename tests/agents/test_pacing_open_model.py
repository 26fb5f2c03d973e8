"""Pacing: no agent task runs outside the open model's arrivals (or a round's slots). Every agent's task
carries the pacing gate, and a real open-model run sends no more requests than its arrivals times the
agents' documented requests per arrival (before the gate, 6 arrivals gave 8,872 session checks).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import locustfile
from agents.base import KitAgent
from agents.capacity.drivers import SerialDriver
from contract import schema
from kit import startup_signals
from tests.locust_runs import run_locust

startup_signals.restore_defaults()  # importing the locustfile took SIGINT from pytest: given back

# Requests each agent sends per arrival, as their docstrings say; session open/close are per agent.
PER_ARRIVAL = {"session.get": 1, "chat.stream": 1}


def agent_classes() -> list[type[KitAgent]]:
    found = [v for v in vars(locustfile).values() if isinstance(v, type) and issubclass(v, KitAgent)]
    return [c for c in found if not c.abstract]


@pytest.mark.parametrize("cls", agent_classes(), ids=lambda c: c.__name__)
def test_every_agent_task_is_paced(cls):
    if issubclass(cls, SerialDriver):
        pytest.skip(
            "capacity/churn drivers run alone, as fast as the target allows (agents/capacity/drivers.py)"
        )
    assert cls.tasks and all(getattr(t, "paced", False) for t in cls.tasks), cls.__name__


@pytest.mark.e2e
def test_an_open_model_run_sends_at_most_its_arrivals_times_requests_per_arrival(tmp_path):
    run_dir = tmp_path / "run"
    done = run_locust(
        run_dir,
        "SessionAgent",
        "ChatAgent",
        "--load-profile",
        "smoke",
        "--duration",
        "6s",
        "--arrival-rate",
        "2",
        "--sim-args",
        "--ttft-ms 20",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    arrivals = json.loads((run_dir / schema.RUN_JSON).read_text())["open_model"]
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV).operation.value_counts()
    paced = sum(requests.get(op, 0) * n for op, n in PER_ARRIVAL.items())
    served = arrivals["issued_arrivals"] - arrivals["dropped_arrivals"]
    assert 0 < paced <= arrivals["issued_arrivals"] and paced >= served - 3  # 3 agents may be mid-work
    assert requests.get("session.create", 0) == requests.get("session.close", 0) <= 3
