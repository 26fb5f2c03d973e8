"""Hermes Kanban (hermes-agent 0.19's `hermes kanban` CLI) on a throwaway HERMES_HOME board: tasks created
by the agent carry the run's tenant, board stats count them, a task ended by a stand-in worker (this test
driving `claim`/`complete`/`block` through the CLI, as no LLM runs here) is recorded with the board's times,
and cleanup archives tagged tasks only, never a task created by hand.

Skipped unless a `hermes` executable is found (LOADKIT_HERMES_BIN, or on PATH).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pandas as pd
import pytest

from agents.gateways.hermes_kanban import HermesKanbanAgent
from agents.gateways.kanban_cli import KanbanCli, cleanup, run_tag
from agents.gateways.kanban_stats import board_stats
from agents.presets import preset
from analysis.queue import stale_limit_s, stale_readings
from contract import schema
from sampler.options import SamplerOptions
from sampler.queue_probe import field_value
from tests.gateways.harness import HERMES, NEEDS_HERMES, RUN_ID, agent_user, free_port, rows, running_server
from tests.locust_runs import wait_for
from tests.paths import REPO

pytestmark = NEEDS_HERMES
TAG = run_tag(RUN_ID)


@pytest.fixture
def board(tmp_path, monkeypatch) -> KanbanCli:
    """A board in its own HERMES_HOME, so no real board is ever read or written."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("HERMES_KANBAN_BOARD", raising=False)
    return KanbanCli.of(HERMES)


def kanban_user(tmp_path, **options):
    options = {"hermes_command": HERMES, "poll_interval": 0.1, "task_timeout": 20.0, **options}
    return agent_user(HermesKanbanAgent, "", tmp_path / "run", **options)


def by_id(cli: KanbanCli, archived: bool = True) -> dict[str, dict]:
    listed = cli.json("list", *(["--archived"] if archived else []))
    return {t["id"]: t for t in listed}


def test_created_tasks_carry_the_run_tag_and_board_stats_count_them(board, tmp_path):
    hand = board.json("create", "a human's task")["id"]
    with kanban_user(tmp_path, cleanup=False) as user:
        ids = [user.submit().task_id for _ in range(2)]
    tasks = by_id(board)
    assert {tasks[i]["tenant"] for i in ids} == {TAG} and tasks[hand]["tenant"] is None
    assert all(RUN_ID in tasks[i]["title"] for i in ids)
    stats = board_stats(board, RUN_ID)
    assert stats["by_status"] == {"ready": 3} and stats["queue_length"] == 3 and stats["in_progress"] == 0
    assert stats["oldest_ready_age_s"] is not None and stats["run"]["by_status"] == {"ready": 2}
    creates = [r for r in rows(tmp_path / "run", schema.REQUESTS_CSV) if r["operation"] == "kanban.create"]
    assert [r["ok"] for r in creates] == ["1", "1"] and all(float(r["latency_ms"]) > 0 for r in creates)


def test_task_ended_by_a_stand_in_worker_is_recorded_with_board_times(board, tmp_path):
    with kanban_user(tmp_path) as user:
        done_row, blocked_row = user.submit(), user.submit()
        board.run("claim", done_row.task_id)  # the stand-in worker takes it: running, started_at set
        user.poll_once(done_row)
        assert done_row.status == "unfinished" and done_row.started_ts is not None
        board.run("complete", done_row.task_id, "--result", "stand-in done")
        user.follow(done_row)
        board.run("block", blocked_row.task_id, "stand-in gives up")
        user.follow(blocked_row)
    tasks = {t["task_id"]: t for t in rows(tmp_path / "run", schema.TASKS_CSV)}
    done, blocked = tasks[done_row.task_id], tasks[blocked_row.task_id]
    assert done["status"] == "done" and done["error"] == "", done
    submitted, started, finished = (float(done[k]) for k in ("submitted_ts", "started_ts", "finished_ts"))
    assert submitted <= started <= finished and float(done["total_ms"]) >= 0
    assert done["times_from"] == "gateway" and done["polled_run_ms"] != "", done
    assert blocked["status"] == "failed" and blocked["error"] == "stand-in gives up", blocked


def test_cleanup_archives_tagged_tasks_only(board, tmp_path):
    hand = [board.json("create", "real work")["id"], board.json("create", "other", "--tenant", "team")["id"]]
    with kanban_user(tmp_path) as user:
        mine = user.submit().task_id
        user.created.append(hand[0])  # a wrong id in the agent's list: the re-check must refuse it
    leftover = board.json("create", "crashed run's task", "--tenant", TAG)["id"]
    assert by_id(board)[mine]["status"] == "archived" and by_id(board)[leftover]["status"] == "ready"
    assert cleanup(RUN_ID, board) == [leftover]
    tasks = by_id(board)
    assert tasks[leftover]["status"] == "archived"
    assert [tasks[h]["status"] for h in hand] == ["ready", "ready"], "cleanup touched an untagged task"
    archives = [r for r in rows(tmp_path / "run", schema.REQUESTS_CSV) if r["operation"] == "kanban.archive"]
    assert [(r["ok"], r["task_id"]) for r in archives] == [("1", mine)]


def test_cli_failure_is_a_one_line_row_and_no_task(board, tmp_path):
    with kanban_user(tmp_path, kanban_board="no-such-board") as user:
        assert user.submit() is None
    (row,) = rows(tmp_path / "run", schema.REQUESTS_CSV)
    assert row["ok"] == "0" and "no-such-board" in row["error"] and "\n" not in row["error"], row


def test_stats_sidecar_serves_the_preset_queue_fields(board):
    board.json("create", "queued", "--tenant", TAG)
    port = free_port()
    command = [sys.executable, "-m", "agents.gateways.hermes_kanban", "--serve-stats", str(port)]
    command += ["--hermes-command", HERMES, "--run-id", RUN_ID, "--refresh", "0.5"]
    probe = preset("hermes-kanban").queue
    with running_server(command, preset("hermes-kanban").health_path, port) as url:
        doc = httpx.get(url + probe.path, timeout=10).json()
    assert field_value(doc, probe.queue_field) == 1 and field_value(doc, probe.in_progress_field) == 0
    assert doc["run"]["tag"] == TAG and doc["run"]["by_status"] == {"ready": 1}, json.dumps(doc)


def test_standalone_cleanup_command_refuses_an_empty_run_id(board):
    task_id = board.json("create", "keep me")["id"]
    command = [
        sys.executable,
        "-m",
        "agents.gateways.hermes_kanban",
        "--cleanup",
        "",
        "--hermes-command",
        HERMES,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "empty run id" in done.stderr
    assert by_id(board)[task_id]["status"] == "ready"


CLI_DELAY_S = 2.0


def sampled_queue(tmp_path, hermes_command: str) -> tuple[list[dict], dict]:
    """The sidecar on the board (refresh 0.5 s) read for 6 s by the side sampler as the kit starts it
    (the preset's fields, 0.5 s interval); its rows and the run.json the report would read."""
    port = free_port()
    command = [sys.executable, "-m", "agents.gateways.hermes_kanban", "--serve-stats", str(port)]
    command += ["--hermes-command", hermes_command, "--refresh", "0.5"]
    probe = preset("hermes-kanban").queue
    out = tmp_path / "samples.csv"
    with running_server(command, "/health", port, timeout_s=60) as url:
        wait_for(lambda: httpx.get(url + probe.path, timeout=10).status_code == 200, 60, "first stats")
        fields = {"queue_field": probe.queue_field, "inflight_field": probe.in_progress_field}
        opts = SamplerOptions(str(out), interval=0.5, duration=6.0, queue_url=url + probe.path, **fields)
        opts.queue_age_field = probe.age_field
        argv = [sys.executable, "-m", "sampler", *opts.to_argv()]
        subprocess.run(argv, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60, check=True)
    return rows(tmp_path, out.name), {"sampler": {"interval_s": 0.5}}


@pytest.mark.e2e
def test_queue_readings_carry_their_age_and_are_marked_stale_past_two_sampler_intervals(board, tmp_path):
    """The board's queue lagged by 15-60 s (each CLI call is a Python start-up) and nothing said
    so. A CLI slowed by a known 2 s: every reading is at least that old, and all are stale (older than 2
    sampler intervals, 1 s); the plain CLI's freshest reading is younger than that delay."""
    board.json("create", "queued", "--tenant", TAG)
    slow = tmp_path / "slow-hermes"
    slow.write_text(f'#!/bin/sh\nsleep {CLI_DELAY_S}\nexec {HERMES} "$@"\n')
    slow.chmod(0o755)
    (tmp_path / "slow").mkdir()
    samples, meta = sampled_queue(tmp_path / "slow", str(slow))
    ages = [float(r["queue_age_s"]) for r in samples]
    assert len(ages) >= 8 and all(r["queue_length"] == "1" for r in samples), samples
    assert min(ages) >= CLI_DELAY_S, ages
    frame = pd.DataFrame({"ts": [float(r["ts"]) for r in samples], "queue_age_s": ages})
    assert stale_readings(frame, meta).all() and stale_limit_s(meta) == 1.0
    (tmp_path / "plain").mkdir()
    fresh, _ = sampled_queue(tmp_path / "plain", HERMES)
    assert min(float(r["queue_age_s"]) for r in fresh) < CLI_DELAY_S, fresh
