"""The workload file's [subagents] section: at which step a task spawns how many children, their most
steps and what each starts from; every bad value refused with the file, the section's line and the key."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from scenarios.errors import WorkloadError
from scenarios.workloads.settings import read_workload

TOOLS = "[tools]\ncount = 2\n\n[loop]\nmax_steps = 6\n\n"


def loop_of(tmp_path, text: str, **options):
    path = tmp_path / "w.toml"
    path.write_text(text)
    return read_workload(SimpleNamespace(workload_file=str(path), **options)).tool_loop


def test_the_section_gives_the_steps_children_and_their_context(tmp_path):
    loop = loop_of(tmp_path, TOOLS + '[subagents]\nat_step = 2\ncount = 3\nmax_steps = 4\ncontext = "fork"\n')
    assert loop is not None and loop.subagents is not None
    section = loop.subagents
    assert (section.at_step, section.count, section.max_steps, section.forks) == (2, 3, 4, True)
    assert loop.child_max_steps == 4
    assert loop.describe()["subagents"] == {"at_step": 2, "count": 3, "max_steps": 4, "context": "fork"}


def test_defaults_spawn_at_step_1_with_the_parents_max_steps(tmp_path):
    loop = loop_of(tmp_path, TOOLS + "[subagents]\ncount = 2\n")
    assert loop.subagents.at_step == 1 and not loop.subagents.forks and loop.child_max_steps == 6
    assert loop_of(tmp_path, TOOLS).subagents is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[subagents]\nat_step = 1\n", r"w.toml:7: \[subagents\]: needs count"),
        ("[subagents]\ncount = 0\n", r"w.toml:7: \[subagents\] count 0: at least 1"),
        ("[subagents]\ncount = 65\n", r"\[subagents\] count 65: above the ceiling of 64 \(each runs at once"),
        ("[subagents]\ncount = 'three'\n", r"\[subagents\] count 'three': expected a whole number"),
        ("[subagents]\ncount = 2\nat_step = 7\n", r"at_step 7: the parent takes at most 6 steps"),
        ("[subagents]\ncount = 2\nmax_steps = 0\n", r"\[subagents\] max_steps 0: at least 1"),
        ("[subagents]\ncount = 2\nmax_steps = 1001\n", r"max_steps 1,001: above the ceiling of 1,000"),
        ("[subagents]\ncount = 2\ncontext = 'clone'\n", r"context 'clone': use 'spawn' or 'fork'"),
        (
            "[subagents]\ncount = 2\ndepth = 2\n",
            r"\[subagents\] depth: unknown key; \[subagents\] takes at_step",
        ),
    ],
)
def test_bad_values_are_refused_in_one_line_naming_the_key(tmp_path, text, message):
    with pytest.raises(WorkloadError, match=message) as raised:
        loop_of(tmp_path, TOOLS + text)
    assert "\n" not in str(raised.value)


def test_subagents_need_tools_and_no_trace(tmp_path):
    with pytest.raises(WorkloadError, match=r"w.toml:1: \[subagents\]: needs a \[tools\] section"):
        loop_of(tmp_path, "[subagents]\ncount = 2\n")
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "input_length": 10}\n')
    with pytest.raises(WorkloadError, match=r"\[subagents\]: a trace's lines are its requests"):
        loop_of(tmp_path, TOOLS + "[subagents]\ncount = 2\n", trace=str(tmp_path / "t.jsonl"))
