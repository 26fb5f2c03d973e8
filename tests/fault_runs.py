"""A kit run in the background for the fault tests: started as a user starts it, waited on by condition,
signalled, and checked afterwards (whole rows, run.json, no process left). Not a test module itself."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from contract import schema
from tests.browser import web_ui_command
from tests.locust_runs import REPO, csv_rows, locust_command, wait_for

ROW_FILES = (schema.REQUESTS_CSV, schema.TASKS_CSV, schema.AGENTS_CSV, schema.SAMPLES_CSV, schema.USERS_CSV)


@dataclass
class KitProcess:
    run_dir: Path
    proc: subprocess.Popen
    out: Path
    err: Path

    @classmethod
    def start(
        cls, run_dir: Path, *args: str, logs: Path | None = None, group: bool = False, web_port: int = 0
    ) -> KitProcess:
        """Start the kit; its stdout and stderr go to files in `logs` (default: beside the run dir).
        `group`: in a process group of its own, as a terminal's foreground job (see signal_group).
        `web_port`: with its web UI on 127.0.0.1:web_port instead of headless."""
        logs = logs or run_dir.parent
        logs.mkdir(parents=True, exist_ok=True)
        out, err = logs / f"{run_dir.name}.out", logs / f"{run_dir.name}.err"
        with open(out, "w") as stdout, open(err, "w") as stderr:
            command = web_ui_command(run_dir, web_port, *args) if web_port else locust_command(run_dir, *args)
            proc = subprocess.Popen(command, cwd=REPO, stdout=stdout, stderr=stderr, start_new_session=group)
        return cls(run_dir, proc, out, err)

    def wait_rows(self, file_name: str, count: int, timeout: float = 60) -> None:
        wait_for(lambda: csv_rows(self.run_dir / file_name) >= count, timeout, f"{count} rows of {file_name}")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def signal_group(self, sig: int) -> None:
        """To every process of the kit's group, as Ctrl-C in a terminal does (needs start(group=True))."""
        os.killpg(self.proc.pid, sig)

    def wait(self, timeout: float = 90) -> int:
        return self.proc.wait(timeout)

    def meta(self) -> dict:
        return json.loads((self.run_dir / schema.RUN_JSON).read_text())

    @property
    def stdout(self) -> str:
        return self.out.read_text()

    @property
    def stderr(self) -> str:
        return self.err.read_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def whole_rows(path: Path) -> int:
    """The file's data rows, asserting every line is complete (ends with a newline, has every column)."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path.name} ends mid-row"
    rows = list(csv.reader(data.decode("utf-8").splitlines()))
    assert all(len(r) == len(rows[0]) for r in rows), f"{path.name} has a short row"
    return max(0, len(rows) - 1)


def assert_whole_rows(run_dir: Path) -> dict[str, int]:
    return {name: whole_rows(run_dir / name) for name in ROW_FILES if (run_dir / name).exists()}


def assert_nothing_left(meta: dict, timeout: float = 15) -> None:
    """The sampler and a target the kit started are gone (zombies of a killed parent count as gone)."""
    pids = [meta.get("sampler", {}).get("pid")]
    if meta["target"]["started_by_kit"]:
        pids.append(meta["target"]["pid"])
    for pid in filter(None, pids):
        wait_for(lambda p=pid: not alive(p), timeout, f"pid {pid} to exit")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gateway_tasks(url: str, run_id: str) -> list[dict]:
    """Every task the simulator holds with this run's tag, as the gateway saw them."""
    reply = httpx.get(f"{url}/v1/tasks", params={"tag": f"loadkit:{run_id}"}, timeout=5)
    return reply.json()["data"]


def gateway_sessions(url: str, run_id: str) -> list[dict]:
    return httpx.get(f"{url}/v1/agents", params={"run_id": run_id}, timeout=5).json()["data"]


def freeze(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)


def thaw(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def task_run(tmp_path: Path, *extra: str) -> KitProcess:
    """Three task agents (manual profile, 60 s unless stopped), polling and sampling fast, plus `extra`."""
    return KitProcess.start(
        tmp_path / "run",
        *("TaskAgent", "--load-profile", "manual", "-u", "3", "-r", "10", "-t", "60s"),
        *("--poll-interval", "0.2", "--sample-interval", "0.5", *extra),
    )
