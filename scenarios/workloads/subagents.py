"""The agent loop's sub-agents, from the workload file's [subagents] section: at which step of a task the
parent spawns its children, how many run at once, the most steps each may take, and what each starts
from (a fresh context of its own, or the parent's history).

Pure: converts and checks the section; it spawns nothing (agents/loop/agent_loop.py runs the children). A bad
value is a WorkloadError naming the file, the section's line and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios import ceilings
from scenarios.errors import WorkloadError
from scenarios.workloads.values import whole_of
from scenarios.workloads.workload_file import Value

SUBAGENTS_KEYS = ("at_step", "count", "max_steps", "context")
# spawn: each child starts from a prompt of its own (the workload's next draw); fork: from the parent's
# history as the spawning step sent it, plus its brief (a prompt cache can hit the shared prefix)
CONTEXTS = ("spawn", "fork")
DEFAULT_AT_STEP = 1


@dataclass(frozen=True)
class SubagentsSection:
    """At step `at_step` of a task, `count` children run at once in place of the step's tools, each a loop
    of at most `max_steps` (None: the parent's [loop] max_steps); the parent waits for the last."""

    count: int
    where: str
    at_step: int = DEFAULT_AT_STEP
    max_steps: int | None = None
    context: str = CONTEXTS[0]

    @property
    def forks(self) -> bool:
        return self.context == "fork"

    def describe(self) -> dict:
        """What run.json records."""
        return {
            "at_step": self.at_step,
            "count": self.count,
            "max_steps": self.max_steps,
            "context": self.context,
        }


def parse_subagents(table: dict[str, Any], where: str, folder: Path) -> SubagentsSection:
    """The [subagents] section (registered with the loop's sections in scenarios/workloads/tool_loop.py)."""
    unknown = sorted(set(table) - set(SUBAGENTS_KEYS))
    if unknown:
        raise WorkloadError(
            f"{where} {unknown[0]}: unknown key; [subagents] takes {', '.join(SUBAGENTS_KEYS)}"
        )
    if "count" not in table:
        raise WorkloadError(f"{where}: needs count (the sub-agents a step spawns at once)")
    count = _at_least_one(table, where, "count", 0)
    ceilings.check_subagents(count, f"{where} count")
    at_step = _at_least_one(table, where, "at_step", DEFAULT_AT_STEP)
    max_steps = _at_least_one(table, where, "max_steps", 0) if "max_steps" in table else None
    if max_steps is not None:
        ceilings.check_steps(max_steps, f"{where} max_steps")
    context = table.get("context", CONTEXTS[0])
    if context not in CONTEXTS:
        raise WorkloadError(f"{where} context {context!r}: use {' or '.join(map(repr, CONTEXTS))}")
    return SubagentsSection(count, where, at_step, max_steps, context)


def check_at_step(section: SubagentsSection, max_steps: int) -> None:
    """The spawning step is one the parent can reach ([loop] max_steps)."""
    if section.at_step > max_steps:
        raise WorkloadError(
            f"{section.where} at_step {section.at_step}: the parent takes at most {max_steps} steps "
            "([loop] max_steps)"
        )


def _at_least_one(table: dict[str, Any], where: str, key: str, default: int) -> int:
    value = whole_of(Value(table[key], f"{where} {key}") if key in table else None, default)
    if value < 1:
        raise WorkloadError(f"{where} {key} {value}: at least 1")
    return value
