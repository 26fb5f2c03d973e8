"""Creating a run directory and keeping its run.json: generated run ids, atomic rewrites, host facts.

run.json is rewritten whole (write to a temporary file, then rename), so a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import sys
import time
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from agents.settings import AgentSettings
from contract import schema
from contract.csv_append import RunFileError
from contract.redact import redact, redact_args, redact_command
from lifecycle.target import Target

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def kit_version(pyproject: Path = PYPROJECT) -> str:
    """The kit's version from pyproject.toml, its one place: the kit runs from its checkout, not installed,
    so package metadata would name whatever was pip-installed last (or nothing)."""
    try:
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, ValueError, KeyError):
        return "unknown"


KIT_VERSION = kit_version()
COMMAND_CHARS = 200


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(3)}"


def create_run_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_run_json(run_dir: Path, meta: dict) -> None:
    """Replace run.json whole; on a write error (disk full) the previous one stays, RunFileError says why."""
    text = redact(json.dumps(meta, indent=2, sort_keys=False, default=str))  # URLs' userinfo too
    write_whole(run_dir / schema.RUN_JSON, text + "\n")


def write_whole(path: Path, text: str) -> None:
    """Replace a file whole (a temporary file, then a rename); on a write error the previous one (or
    none) stays and RunFileError says why: never half a file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunFileError(path, exc) from None


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "kit": KIT_VERSION}
    for package in ("locust", "psutil", "httpx", "pandas"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


def host_facts() -> dict:
    return {
        "cores": psutil.cpu_count(logical=True),
        "memory_total_bytes": psutil.virtual_memory().total,
        "swap_total_bytes": psutil.swap_memory().total,
        "platform": platform.platform(),
    }


def sampled_target(settings_agent: AgentSettings, target: Target) -> list[str]:
    """What the sampler watches, in words that stay the same from run to run (no pid, no free port): a
    history groups runs by it, so one trend never joins two different targets behind the same URL."""
    described = []
    if target.started_by_kit and target.command:
        port = str(urlsplit(target.url or "").port or "")
        words = [Path(target.command[0]).name, *target.command[1:]]
        described.append("started: " + " ".join("{port}" if w == port else w for w in redact_args(words)))
    for pid in settings_agent.target_pid:
        described.append(f"pid running: {_command_of(pid)}")
    described += [f"match: {m}" for m in settings_agent.target_match]
    described += [f"cgroup: {c}" for c in settings_agent.target_cgroup]
    described += [f"sampler service: {u}" for u in settings_agent.sampler_url]
    return described


def _command_of(pid: int) -> str:
    try:
        words = psutil.Process(pid).cmdline()
    except psutil.Error:
        return "(gone)"
    return redact_command(" ".join([Path(words[0]).name, *words[1:]]) if words else "?")[:COMMAND_CHARS]


def command_line() -> list[str]:
    """The command as typed, with the value of anything that looks like a secret masked: a secret
    option's value, a URL's userinfo, and inside --target-cmd/--sim-args (one string each) the same."""
    return redact_args(sys.argv)
