"""Every `locust -f locustfile.py ...` command of README.md and docs/ works as written:
each goes through Locust's own parser with the kit's options and the kit's settings (durations, files,
thresholds, the soak's trend rule) without an error; the documented Kanban `--target-match` catches the
gateway and its workers and none of the agents' own CLI calls; and the cheap ones run: the churn recipe on
the embedded simulator, then the documented index over its run directory.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

from agents.gateways.kanban_cli import KanbanCli, run_tag
from kit import options as kit_options
from kit.judge import refuse_short_trends
from kit.settings import read_settings
from scenarios import registry
from tests.paths import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
WORKFLOWS = sorted((REPO / "examples").glob("*.yml"))  # CI jobs users copy
PLACEHOLDERS = {"PID": "4242", "<run-id>": "doc-run"}


def shell_blocks(path: Path) -> list[str]:
    """The shell code of a doc (its bash and plain fenced blocks) or of a CI workflow (its lines)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yml":
        return ["\n".join(line.strip() for line in text.splitlines())]
    blocks, block, language = [], None, ""
    for line in text.splitlines():
        if line.startswith("```"):
            if block is None:
                block, language = [], line[3:].strip()
            else:
                blocks += ["\n".join(block)] if language in ("", "bash", "sh") else []
                block = None
        elif block is not None:
            block.append(line)
    return blocks


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every `locust -f locustfile.py` line of a bash block (continuations joined,
    `export ...;` prefixes and comments dropped)."""
    found = []
    for path in [*DOCS, *WORKFLOWS]:
        for block in shell_blocks(path):
            for line in block.replace("\\\n", " ").splitlines():
                command = line.split("; ", 1)[-1] if line.startswith("export ") else line
                if command.strip().startswith("locust -f locustfile.py"):
                    found.append((path.name, command.split("   #")[0].split("  # ")[0].strip()))
    return found


def as_argv(command: str) -> list[str]:
    """The command's options as the shell would pass them: `$(...)` gives a pid, a trailing `...` (the
    doc's "and the rest") is dropped, the doc's placeholders get values."""
    command = re.sub(r'"\$\([^)]*\)"', PLACEHOLDERS["PID"], command)
    command = re.sub(r"\$\{\{[^}]*\}\}", "1", command)  # a CI expression (the job's run id)
    words = shlex.split(command, comments=True)
    words = [PLACEHOLDERS.get(w, w) for w in words if w not in ("...", "&")]
    assert words[:3] == ["locust", "-f", "locustfile.py"], words
    return words[3:]


def parse(argv: list[str]):
    parser = get_empty_argument_parser(default_config_files=[str(REPO / "locust.conf")])
    setup_parser_arguments(parser)
    kit_options.add_arguments(parser)
    registry.add_arguments(parser)
    return parser.parse_args(argv)


COMMANDS = documented_commands()


def test_the_docs_hold_the_recipes_this_test_reads():
    assert len(COMMANDS) >= 25, COMMANDS
    assert any("--task-timeout 15m" in c for _, c in COMMANDS)  # the recipe that used to exit 2


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[f"{w}:{c[24:70]}" for w, c in COMMANDS])
def test_a_documented_command_parses_into_settings(where, command, monkeypatch):
    monkeypatch.chdir(REPO)  # the docs' relative paths (examples/...) are the repo's
    options = parse(as_argv(command))
    settings = read_settings(options, "doc-run")
    refuse_short_trends(settings)  # a documented soak is long enough for its own verdict
    if "--task-timeout 15m" in command:
        assert settings.agent.task_timeout == 900.0
    if "--poll-interval 5s" in command:
        assert settings.agent.poll_interval == 5.0


def test_two_pids_in_one_target_pid_are_refused_not_guessed():
    """`pgrep -u "$USER" -f ...` prints one pid per match: two of the user's own gateways are refused with
    the option named, never one of them picked (as `pgrep -o` picked the host's oldest, anyone's)."""
    with pytest.raises(SystemExit) as exited:
        parse(["--target-pid", "4242\n4343"])
    assert exited.value.code == 2


def documented_kanban_match() -> str:
    kanban = [c for w, c in COMMANDS if w == "gateways.md" and "hermes-kanban" in c and "--target-match" in c]
    assert kanban, "docs/gateways.md has no Kanban command with --target-match"
    argv = as_argv(kanban[0])
    return argv[argv.index("--target-match") + 1]


def test_the_documented_kanban_match_catches_the_gateway_and_its_workers_not_the_agents_calls():
    pattern = re.compile(documented_kanban_match())
    hermes = "/srv/hermes-gateway/venv/bin/hermes"  # a path saying "gateway": the loose regex caught it
    gateway = f"/srv/hermes-gateway/venv/bin/python3 {hermes} gateway run --replace"
    worker = f"{hermes} -p default --cli --accept-hooks chat -q work kanban task t_1a2b -Q"  # Hermes' argv
    assert pattern.search(gateway) and pattern.search(worker)
    cli = KanbanCli.of(hermes)
    tag = run_tag("nightly-gateway-soak")
    own_calls = [
        cli.argv(
            "create", "[loadkit nightly-gateway-soak] agent 1", "--tenant", tag, "--body", "check the gateway"
        ),
        cli.argv("show", "t_1a2b", "--json"),
        cli.argv("list", "--tenant", tag, "--json"),
        cli.argv("archive", "t_1a2b"),
        cli.argv("stats", "--json"),
    ]
    caught = [argv for argv in own_calls if pattern.search(" ".join(argv))]
    assert caught == [], caught


@pytest.mark.e2e
def test_the_documented_churn_recipe_and_index_run_as_written(tmp_path):
    """The cheap recipes, run: the churn study on the embedded simulator (a few seconds), then the history
    index over the folder it wrote (only the folder is the test's own)."""
    [churn] = [c for w, c in COMMANDS if w == "README.md" and "--load-profile churn" in c]
    runs = tmp_path / "runs"
    locust = [sys.executable, "-m", "locust", "-f", "locustfile.py"]
    argv = [*locust, *as_argv(churn), "--run-dir", str(runs / "churn")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "churn: " in done.stdout and "kept above the baseline after each cycle" in done.stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "python -m analysis index runs/" in readme
    index = [sys.executable, "-m", "analysis", "index", str(runs)]
    done = subprocess.run(index, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "churn" in (runs / "index.md").read_text()
