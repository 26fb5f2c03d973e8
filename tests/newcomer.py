"""The newcomer's first run: README's main command, from a fresh copy of the checkout, with an empty HOME
and no matplotlib or XDG cache, checked against what README promises (every file it lists, the printed
summary, no traceback); then the web UI's first start the same way. Used by .ci/run
(`python -m tests.newcomer`) and by tests/test_newcomer.py.

Everything it checks is read from README.md, so README and the kit cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from lifecycle.target import free_port
from tests.browser import HEADLESS_CHROMIUM, answers, terminate
from tests.paths import REPO

# What a machine that has never run the kit lacks: caches a previous run (or a test run) would leave.
CACHE_VARIABLES = ("XDG_CACHE_HOME", "MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
RUN_TIMEOUT_S = 300  # the smoke run is ~30 s; the rest is start-up and the report on a busy host
TRACEBACK = "Traceback (most recent call last)"


@dataclass(frozen=True)
class Check:
    what: str
    ok: bool
    detail: str = ""


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def main_command(text: str | None = None) -> list[str]:
    """The first `locust ...` line of README's "Two commands" block, without its comment."""
    block = (text or readme()).split("## Two commands", 1)[1].split("```", 2)[1]
    [line] = [ln for ln in block.splitlines() if ln.startswith("locust ")][:1]
    return shlex.split(line.split("#", 1)[0])


def listed_files(text: str | None = None) -> list[str]:
    """The file names in README's listing of what its main command wrote ("and writes (this run ...):")."""
    listing = (
        (text or readme()).split("and writes (this run wrote every file below;", 1)[1].split("```", 2)[1]
    )
    return re.findall(r"\b[\w-]+\.(?:json|csv|md|html|png)\b", listing)


def fresh_copy(dest: Path) -> Path:
    """The checkout as a fresh clone has it: tracked files and new ones not ignored, as they are now
    (no runs/, no caches, no virtualenvs)."""
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, names):
        source = REPO / os.fsdecode(name)
        if source.is_file():  # a tracked file deleted in the work tree is gone from the copy too
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / os.fsdecode(name))
    return dest


def newcomer_env(home: Path) -> dict[str, str]:
    """This environment as a new account has it: an empty HOME, no cache variables, no LOCUST_* options,
    and the Python that runs this first on PATH (where `pip install` put `locust`)."""
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARIABLES and not k.startswith("LOCUST_")}
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_main_command(clone: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        main_command(),
        cwd=clone,
        env=newcomer_env(home),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def check_run(clone: Path, done: subprocess.CompletedProcess) -> list[Check]:
    """What README promises of the main command, one check each."""
    runs = sorted(p for p in (clone / "runs").glob("*") if p.is_dir()) if (clone / "runs").is_dir() else []
    checks = [
        Check("exit code 0", done.returncode == 0, f"exit code {done.returncode}"),
        Check("one run directory under runs/", len(runs) == 1, ", ".join(p.name for p in runs)),
        Check("no traceback on stdout or stderr", TRACEBACK not in done.stdout + done.stderr),
    ]
    if len(runs) != 1:
        return checks
    run = runs[0]
    for name in listed_files():
        path = run / name
        checks.append(Check(f"{name} written", path.is_file() and path.stat().st_size > 0))
    meta = json.loads((run / "run.json").read_text()) if (run / "run.json").is_file() else {}
    checks.append(
        Check(
            "run.json: profile complete, exit code 0",
            (meta.get("stop_reason"), meta.get("exit_code"))
            == (
                "profile complete",
                0,
            ),
            f"{meta.get('stop_reason')!r}, {meta.get('exit_code')!r}",
        )
    )
    report = meta.get("report")
    checks.append(
        Check("run.json: report written", isinstance(report, dict) and report.get("written") is True)
    )
    lines = done.stdout.splitlines()
    checks.append(Check("summary's first line printed", f"run {run.name}: profile complete" in lines))
    answer = next((ln for ln in lines if ln.startswith("Did the gateway hold the smoke load? ")), "")
    checks.append(
        Check(
            "the headline answers Yes or No with its rule",
            bool(re.match(r"Did the gateway hold the smoke load\? (Yes|No): .+\(rule: ", answer)),
            answer,
        )
    )
    checks.append(
        Check("summary's last line printed", f"exit code: 0   run directory: runs/{run.name}" in lines)
    )
    return checks


def web_ui_first_start(clone: Path, home: Path) -> list[Check]:
    """README's web UI command (the main command without --headless), a first start from its form (a
    3 s smoke run), checked like the headless run: run.json complete, the report written, no traceback."""
    log = clone / "web-ui.log"
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*web_ui_command(), "--web-port", str(port)],
            cwd=clone,
            env=newcomer_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        checks = [Check(f"web UI answers on {url}", _until(lambda: answers(url), 60))]
        if checks[-1].ok and shutil.which("chromium"):  # the form, as a browser under that HOME renders it
            checks.append(Check("start form rendered by Chromium", "Load Profile" in _rendered(url, home)))
        if checks[-1].ok:
            form = {"user_count": "1", "spawn_rate": "1", "load_profile": "smoke", "duration": "3s"}
            started = httpx.post(f"{url}/swarm", data=form, timeout=30).json().get("success") is True
            checks.append(Check("a smoke run started from the form", started))
        if checks[-1].ok:
            checks.append(Check("the run ended", _until(lambda: "stop_reason" in _run_json(clone), 90)))
            # written after run.json; a traceback in the log means it never will be
            report = lambda: any(clone.glob("runs/*/report.html"))  # noqa: E731
            _until(lambda: report() or TRACEBACK in log.read_text(), 60)
            checks.append(Check("report.html written", report()))
    finally:
        terminate(proc)
    meta = _run_json(clone)
    outcome = (meta.get("stop_reason"), meta.get("exit_code"))
    checks.append(
        Check("run.json: profile complete, exit code 0", outcome == ("profile complete", 0), str(outcome))
    )
    checks.append(
        Check("no traceback in the web UI's output", TRACEBACK not in log.read_text(errors="replace"))
    )
    return checks


def web_ui_command() -> list[str]:
    return [arg for arg in main_command() if arg != "--headless"]


def _rendered(url: str, home: Path) -> str:
    """The page's text as headless Chromium renders it (scripts and styles left out)."""
    dom = subprocess.run(
        [*HEADLESS_CHROMIUM, "--virtual-time-budget=8000", "--dump-dom", url],
        env=newcomer_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return re.sub(r"<(script|style).*?</\1>", "", dom, flags=re.S)


def _run_json(clone: Path) -> dict:
    """The run.json of the clone's one run so far ({} before it exists or while it is rewritten)."""
    try:
        [path] = clone.glob("runs/*/run.json")
        return json.loads(path.read_text())
    except (ValueError, OSError):
        return {}


def _until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def listing(checks: list[Check]) -> list[str]:
    return [f"{'ok  ' if c.ok else 'FAIL'} {c.what}{f' ({c.detail})' if c.detail else ''}" for c in checks]


def report(done: subprocess.CompletedProcess, checks: list[Check]) -> str:
    """Each check, then the run's console summary (the end of its stdout) and the end of its stderr."""
    start = done.stdout.rfind("\nrun ")
    out = [
        f"$ {shlex.join(main_command())}   (HOME empty; {', '.join(CACHE_VARIABLES)} unset)",
        *listing(checks),
    ]
    out += ["--- summary (end of stdout):", done.stdout[start + 1 :] if start >= 0 else done.stdout[-3000:]]
    return "\n".join([*out, "--- end of stderr:", done.stderr[-3000:]])


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="loadkit-newcomer-") as tmp:
        clone, home = fresh_copy(Path(tmp) / "clone"), Path(tmp) / "home"
        home.mkdir()
        done = run_main_command(clone, home)
        checks = check_run(clone, done)
        print(report(done, checks), flush=True)
        web_clone, web_home = fresh_copy(Path(tmp) / "web-clone"), Path(tmp) / "web-home"
        web_home.mkdir()
        print(f"$ {shlex.join(web_ui_command())} --web-port PORT   (its first start, HOME empty)", flush=True)
        web = web_ui_first_start(web_clone, web_home)
        print("\n".join(listing(web)), flush=True)
        if not all(c.ok for c in web):
            print("--- end of the web UI's output:", (web_clone / "web-ui.log").read_text()[-3000:], sep="\n")
    return 0 if all(c.ok for c in [*checks, *web]) else 1


if __name__ == "__main__":
    sys.exit(main())
