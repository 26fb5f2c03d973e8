"""The `hermes kanban` CLI as a client: one subcommand per call (stdout, or its JSON), the run's tag on
every task it creates (tenant `loadkit-<run id>`), and the archive of a run's tagged tasks only.

Runs the CLI and reads its answers; it measures nothing and records no row.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass

from agents.base import one_line

TAG_PREFIX = "loadkit-"
CLI_TIMEOUT_S = 60.0


class KanbanError(Exception):
    """A `hermes kanban` call that failed; Hermes exits 0 on most errors, so the output decides."""


def run_tag(run_id: str) -> str:
    """The tenant every task of this run carries: `list --tenant` filters on it exactly, the dashboard
    shows it, and the dispatcher hands it to workers (HERMES_TENANT), so it survives every edit path."""
    if not run_id or not run_id.strip():
        raise KanbanError("refusing an empty run id: it would tag nothing apart")
    return f"{TAG_PREFIX}{run_id}"


def run_title(run_id: str, agent_id: str) -> str:
    """A title prefix a human sees on the board; informative only, the tenant is the tag checked."""
    return f"[loadkit {run_id}] agent {agent_id}"


@dataclass(frozen=True)
class KanbanCli:
    """How to call the board: the command (may be `uv run hermes`, a venv path...) and the board slug."""

    command: tuple[str, ...] = ("hermes",)
    board: str | None = None
    timeout_s: float = CLI_TIMEOUT_S

    @classmethod
    def of(cls, command: str, board: str | None = None, timeout_s: float = CLI_TIMEOUT_S) -> KanbanCli:
        return cls(tuple(shlex.split(command)), board or None, timeout_s)

    def argv(self, *args: str) -> list[str]:
        board = ["--board", self.board] if self.board else []
        return [*self.command, "kanban", *board, *args]

    def run(self, *args: str) -> str:
        """Run one subcommand and return its stdout; raise KanbanError with stderr's last line when
        it printed nothing (Hermes reports `no such task`, unknown boards... on stderr with exit 0)."""
        try:
            done = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise KanbanError(f"timeout: no answer in {self.timeout_s:g} s") from None
        except OSError as exc:
            raise KanbanError(f"cannot run {self.command[0]!r}: {exc}") from None
        if done.returncode != 0 or (not done.stdout.strip() and done.stderr.strip()):
            lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
            raise KanbanError(one_line(lines[-1]))
        return done.stdout

    def json(self, *args: str) -> dict | list:
        return parse_json(self.run(*args, "--json"))

    def json_object(self, *args: str) -> dict:
        doc = self.json(*args)
        if not isinstance(doc, dict):
            raise KanbanError(f"`hermes kanban {' '.join(args)} --json`: expected an object, got a list")
        return doc


def parse_json(text: str) -> dict | list:
    """The JSON document in a CLI's stdout, tolerating a banner line printed before it."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise KanbanError(f"expected JSON, got {one_line(text, 80) or 'nothing'}")
    try:
        return json.loads(text[min(starts) :])
    except ValueError:
        raise KanbanError(f"expected JSON, got {one_line(text, 80)}") from None


def archived_ids(out: str) -> set[str]:
    """Ids in `Archived t_x` lines: the CLI's only sign of success (it exits 0 on `cannot archive`)."""
    words = [line.split() for line in out.splitlines()]
    return {w[1] for w in words if len(w) > 1 and w[0] == "Archived"}


def check_archived(out: str, wanted: list[str]) -> None:
    missing = [task_id for task_id in wanted if task_id not in archived_ids(out)]
    if missing:
        raise KanbanError(f"not archived: {' '.join(missing)}")


def cleanup(run_id: str, cli: KanbanCli | None = None) -> list[str]:
    """Archive every task tagged with `run_id` and nothing else (a crashed run's leftovers); returns
    the archived ids. Each listed task's tenant is checked again before its id is passed on."""
    cli = cli or KanbanCli()
    tag = run_tag(run_id)
    listed = cli.json("list", "--tenant", tag)
    ids = [str(t["id"]) for t in listed if isinstance(t, dict) and t.get("tenant") == tag and t.get("id")]
    if not ids:
        return []
    out = cli.run("archive", *ids)
    check_archived(out, ids)
    return ids
