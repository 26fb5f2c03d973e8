"""The docs run: every command of README.md and docs/*.md that runs on the embedded simulator (each
`locust -f locustfile.py` line, then each `python -m analysis` line over the runs they made) is run as
written, its durations shortened by one variable (LOADKIT_DOCS_DURATION, default 5s), and its exit code
checked; a command that needs something the embedded simulator is not (a gateway, another machine) says
so in the docs with a `# needs: ...` comment and is skipped with that reason. The convention, for whoever
writes a doc command: docs/testing.md, "Commands in the docs".
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from analysis.delivery import SHORT_PCT
from analysis.headline import profile_of
from analysis.levels import run_levels
from analysis.load import load_run
from analysis.sweep import sweep
from contract import exit_codes
from contract.units import parse_duration
from tests.paths import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DURATION_ENV = "LOADKIT_DOCS_DURATION"
LOCUST, ANALYSIS = "locust -f locustfile.py", "python -m analysis"
NEEDS = re.compile(r"#\s*needs:\s*(.+?)\s*$")
# What a command needs that the embedded simulator is not: each such command must carry `# needs: ...`.
EXTERNAL = re.compile(
    r"--(host|master|worker|acp-command|mcp-command|target-cmd|sampler-url)(?![\w-])"
    r"|--gateway (?!simulator(?![\w-]))"
)
# Options whose value is the run's length (shortened to the variable) or one step's (to a fifth of it).
RUN_LENGTH = ("-t", "--run-time", "--duration", "--baseline", "--stop-timeout")
STEP_LENGTH = ("--step-every", "--hold")
SIM_STEP_LENGTH = ("--task-seconds", "--dispatch-interval")  # the simulator's, inside --sim-args
SHAPED = ("smoke", "average", "stress", "spike")  # profiles whose length is --duration (default minutes)
STEPPED = ("breakpoint", "fit")  # profiles whose steps last --step-every (default 30 s and 10 s)
# Documented commands another test already runs as written, or that cannot be shortened: not run twice.
COVERED = {
    "locust -f locustfile.py --headless": "README's main command: tests/test_newcomer.py runs it",
    "locust -f locustfile.py --headless --load-profile churn --churn-cycles 10": (
        "README's churn recipe: tests/kit/test_kit_documented_commands.py runs it as written"
    ),
    "--load-profile soak": (
        "a soak shorter than its trend rule (--trend-min-duration, 20 min) is refused before load by design: "
        "tests/kit/test_soak_gate.py runs the soak gate"
    ),
    "--processes 4": "every core: tests/kit/test_kit_every_core.py runs --processes on the simulator",
}
# Verdict exit codes a shortened documented run may end with on a shared 2-core host (a threshold the
# short run failed, latency from a saturated load generator, a rate it could not deliver, a trend too short
# to judge): each still ran, recorded and reported. Bad input (2), a crash or a traceback fail the test.
VERDICTS = {
    exit_codes.OK,
    exit_codes.REQUEST_ERRORS,
    exit_codes.INVALID_RUN,
    exit_codes.LOAD_NOT_DELIVERED,
    exit_codes.THRESHOLDS_UNJUDGED,
    exit_codes.THRESHOLD_FAILED,
}
PARALLEL = 3  # locust runs at once (each on its own free port): the 2-core budget of the parallel phase


@dataclass(frozen=True)
class DocCommand:
    where: str  # FILE:LINE
    text: str  # the command, continuation lines joined, its comment dropped
    needs: str  # what it needs beyond the embedded simulator ('' when nothing)


def doc_commands(paths: list[Path] = DOCS) -> list[DocCommand]:
    """Every `locust -f locustfile.py` and `python -m analysis` line of the bash, sh and plain fenced
    blocks of `paths`, with the `# needs:` of its own line or of a comment line above it in its block."""
    found = []
    for path in paths:
        for number, line, needs in shell_lines(path.read_text(encoding="utf-8")):
            command = line.split("; ", 1)[-1] if line.startswith("export ") else line
            if command.startswith((LOCUST, ANALYSIS)):
                own = NEEDS.search(command)
                text = re.split(r"\s+#", command, maxsplit=1)[0].strip()
                found.append(DocCommand(f"{path.name}:{number}", text, own.group(1) if own else needs))
    return found


def shell_lines(text: str) -> list[tuple[int, str, str]]:
    """(first line number, the line with its continuations joined, the needs of a `# needs:` comment line
    above it in its block) of every line of the bash, sh and plain fenced blocks."""
    out: list[tuple[int, str, str]] = []
    inside, shell, needs, pending, start = False, False, "", "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            inside, shell, needs = (not inside), line[3:].strip() in ("", "bash", "sh"), ""
            continue
        if not (inside and shell):
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            needs = m.group(1) if (m := NEEDS.search(stripped)) else needs
            continue
        start = start or number
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        out.append((start, pending + stripped, needs))
        pending, start = "", 0
    return out


def docs_seconds() -> float:
    return parse_duration(os.environ.get(DURATION_ENV, "5s"))


def shortened(words: list[str], seconds: float) -> list[str]:
    """The command's words with every run length at most `seconds`, every step length at most a fifth of
    it (also the simulator's task and dispatch times in --sim-args); a shaped profile without --duration,
    a sweep without --hold, a stepped profile without --step-every, gets one; in-flight calls get at most
    `seconds` to finish at the end (--stop-timeout: locust.conf's 30 s would hold a run of long tasks)."""
    out, step = list(words), seconds / 5
    for i, word in enumerate(out[:-1]):
        if word in RUN_LENGTH:
            out[i + 1] = _at_most(out[i + 1], seconds)
        elif word in STEP_LENGTH:
            out[i + 1] = _at_most(out[i + 1], step)
        elif word == "--sim-args":
            sim = shlex.split(out[i + 1])
            for j, knob in enumerate(sim[:-1]):
                if knob in SIM_STEP_LENGTH:
                    sim[j + 1] = f"{min(float(sim[j + 1]), step):g}"
            out[i + 1] = shlex.join(sim)
    profile = out[out.index("--load-profile") + 1] if "--load-profile" in out else None
    if profile is None and not {"-u", "-t", "--run-time", "--trace", "--sessions"} & set(out):
        profile = "smoke"  # the kit's default profile
    if profile in SHAPED and "--duration" not in out:
        out += ["--duration", f"{seconds:g}s"]
    if profile == "sweep" and "--hold" not in out:
        out += ["--hold", f"{step:g}s"]
    if profile in STEPPED and "--step-every" not in out:
        out += ["--step-every", f"{step:g}s"]
    if "--stop-timeout" not in out:
        out += ["--stop-timeout", f"{seconds:g}s"]
    return out


def _at_most(value: str, seconds: float) -> str:
    return f"{min(parse_duration(value), seconds):g}s"


def locust_argv(command: str) -> list[str]:
    """The options of a documented locust command as the shell passes them (the doc's "..." dropped)."""
    words = [w for w in shlex.split(command) if w != "..."]
    assert words[:3] == LOCUST.split(), words
    return words[3:]


def covered(command: DocCommand) -> str | None:
    """Why another test covers the command: a key that is a whole command matches it alone, another key
    any command holding it."""
    whole = (key == command.text if key.startswith(LOCUST) else key in command.text for key in COVERED)
    return next((why for why, hit in zip(COVERED.values(), whole, strict=True) if hit), None)


COMMANDS = doc_commands()


def test_the_extractor_reads_commands_continuations_and_needs():
    text = (
        "```bash\n# needs: a running LiteLLM proxy\nlocust -f locustfile.py --headless \\\n"
        "       --gateway litellm --host http://127.0.0.1:4000 -t 5m\n```\n\n```\n"
        "locust -f locustfile.py --headless -u 2 -t 1m   # a comment\n"
        "locust -f locustfile.py --headless --gateway a2a --host http://h:1   # needs: an A2A agent\n```\n"
        "```python\nlocust -f locustfile.py --not-shell\n```\n"
    )
    found = [(line, needs) for _, line, needs in shell_lines(text)]
    assert found[0] == (
        "locust -f locustfile.py --headless --gateway litellm --host http://127.0.0.1:4000 -t 5m",
        "a running LiteLLM proxy",
    )
    assert found[1] == ("locust -f locustfile.py --headless -u 2 -t 1m   # a comment", "")
    assert found[2][1] == "" and NEEDS.search(found[2][0]).group(1) == "an A2A agent"
    assert len(found) == 3  # the python block is no shell


def test_durations_are_shortened_and_nothing_else_changes():
    argv = locust_argv(
        "locust -f locustfile.py --headless TaskAgent --load-profile rounds --rounds 6,8,10 --baseline 1m "
        '--sim-args "--max-in-progress 6 --task-seconds 90 --dispatch-interval 60" -t 10m --step-every 30s'
    )
    short = shortened(argv, 5.0)
    assert short[short.index("-t") + 1] == "5s" and short[short.index("--step-every") + 1] == "1s"
    assert short[short.index("--baseline") + 1] == "5s" and "--rounds" in short and "6,8,10" in short
    assert (
        short[short.index("--sim-args") + 1] == "--max-in-progress 6 --task-seconds 1 --dispatch-interval 1"
    )
    end = ["--stop-timeout", "5s"]  # in-flight calls get the run's length at most to finish
    assert shortened(["--load-profile", "average"], 5.0)[-4:] == ["--duration", "5s", *end]
    assert shortened(["--load-profile", "sweep"], 5.0)[-4:] == ["--hold", "1s", *end]
    assert shortened(["--load-profile", "fit"], 5.0)[-4:] == ["--step-every", "1s", *end]
    assert shortened(["-t", "2s", "--stop-timeout", "1"], 5.0) == ["-t", "2s", "--stop-timeout", "1s"]
    assert shortened(["--headless"], 5.0) == ["--headless", "--duration", "5s", *end]  # the default: smoke


def test_the_docs_hold_commands_and_every_external_one_says_what_it_needs():
    runnable = [c for c in COMMANDS if not c.needs]
    assert len([c for c in runnable if c.text.startswith(LOCUST)]) >= 15, COMMANDS
    unmarked = [f"{c.where}: {c.text}" for c in runnable if EXTERNAL.search(c.text)]
    assert not unmarked, "a command that needs a gateway, without '# needs: ...':\n" + "\n".join(unmarked)


def run_all(argvs: dict[str, list[str]], out: Path, env: dict) -> dict[str, tuple[int, str]]:
    """Run each argv from the repository root, PARALLEL at once; (exit code, stdout + stderr) each."""
    waiting, running, done = list(argvs.items()), {}, {}
    while waiting or running:
        while waiting and len(running) < PARALLEL:
            key, argv = waiting.pop(0)
            log = out / f"{re.sub(r'[^A-Za-z0-9]+', '_', key)[:80]}-{len(done) + len(running)}.log"
            handle = log.open("w")
            proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)
            running[key] = (proc, handle, log, time.monotonic())
        for key, (proc, handle, log, started) in list(running.items()):
            if proc.poll() is None and time.monotonic() - started < 300:
                continue
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            handle.close()
            done[key] = (proc.returncode, log.read_text(errors="replace"))
            del running[key]
        time.sleep(0.2)
    return done


def failures(results: dict[str, tuple[int, str]], allowed: set[int]) -> list[str]:
    """The commands that did not run: an exit code outside `allowed`, or a traceback."""
    bad = []
    for key, (code, output) in results.items():
        if code not in allowed or "Traceback (most recent call last)" in output:
            bad.append(f"{key}: exit {code}\n{output[-1500:]}")
    return bad


@pytest.mark.e2e
@pytest.mark.timeout(900)  # ~30 shortened runs, 3 at a time, beside the suite's other jobs on 2 cores
def test_every_simulator_command_of_the_docs_runs_with_its_durations_shortened(tmp_path):
    seconds = docs_seconds()
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    locust, skipped = {}, []
    for c in COMMANDS:
        if not c.text.startswith(LOCUST):
            continue
        why = c.needs or covered(c)
        if why:
            skipped.append(f"{c.where}: {why}")
            continue
        slug = f"{c.where.replace(':', '-').replace('.md', '')}"
        argv = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            "locustfile.py",
            *shortened(locust_argv(c.text), seconds),
        ]
        locust[f"{c.where} {c.text}"] = [*argv, "--run-dir", str(runs / slug)]
    first = next(iter(locust.values()))
    wrong = [*first[:6], "--peak-userz", "3", *first[6:]]  # the same command with a misspelt option
    results = run_all({**locust, "control: a wrong option": wrong}, tmp_path, env)
    control = results.pop("control: a wrong option")
    assert failures({"control": control}, VERDICTS), "a wrong option was not caught: " + control[1][-500:]
    assert not failures(results, VERDICTS), "\n\n".join(failures(results, VERDICTS))
    made = sorted(p for p in runs.iterdir() if (p / "run.json").is_file())
    assert len(made) == len(locust), made
    for run_dir in made:
        assert answered_where_delivered(run_dir), (
            f"{run_dir.name}: the sweep's answer is a rate not delivered"
        )
    analysis = {
        f"{c.where} {c.text}": analysis_argv(c.text, runs, made)
        for c in COMMANDS
        if c.text.startswith(ANALYSIS) and not c.needs  # a needing one reads the runs its block's made
    }
    results = run_all(analysis, tmp_path, env)
    # a judgement of tonight against too few nights (8) or a regression (99) is its verdict, not a failure
    judged = {exit_codes.OK, exit_codes.THRESHOLDS_UNJUDGED, exit_codes.THRESHOLD_FAILED}
    bad = [
        failed
        for key, result in results.items()
        for failed in failures({key: result}, judged if "--judge" in key else {exit_codes.OK})
    ]
    assert not bad, "\n\n".join(bad)
    print(f"ran {len(locust)} locust and {len(analysis)} analysis commands; skipped:", *skipped, sep="\n  ")


def answered_where_delivered(run_dir: Path) -> bool:
    """A sweep's answer (the highest rate that met every SLO) is a rate the run delivered: at most 5 % of
    its arrivals late or dropped there. True for any other run."""
    run = load_run(run_dir)
    found = sweep(run) if profile_of(run) == "sweep" else None
    levels = run_levels(run)
    if found is None or found.best_rate is None or levels is None:
        return True
    at = levels.table.loc[round(found.best_rate, 6)]
    return (
        bool(at["late_pct"] + at["dropped_pct"] <= SHORT_PCT) and found.best_rate not in found.not_delivered
    )


def analysis_argv(command: str, runs: Path, made: list[Path]) -> list[str]:
    """A documented `python -m analysis` line over the runs this test made: a run directory's placeholder
    a run, a folder's the runs folder, optional [...] parts and "..." dropped."""
    command = re.sub(r"\[[^\]]*\]", "", command)
    places = {"RUN_A": made[0], "RUN_B": made[-1], "RUN_DIR": made[0], "RUNS_DIR": runs, "runs/": runs}
    words = [str(places.get(w, w)) for w in shlex.split(command) if w != "..."]
    words = [str(made[0]) if re.fullmatch(r"runs/<[^>]+>", w) else w for w in words]
    return [sys.executable, *words[1:]]
