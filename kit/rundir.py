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

import psutil

from contract import schema
from contract.csv_append import RunFileError
from contract.redact import redact_args, redact_command

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def kit_version(pyproject: Path = PYPROJECT) -> str:
    """The kit's version from pyproject.toml, its one place: the kit runs from its checkout, not installed,
    so package metadata would name whatever was pip-installed last (or nothing)."""
    try:
        return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, ValueError, KeyError):
        return "unknown"


KIT_VERSION = kit_version()
COMMAND_FLAGS = frozenset({"--target-cmd", "--sim-args", "--acp-command", "--hermes-command"})


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(3)}"


def create_run_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_run_json(run_dir: Path, meta: dict) -> None:
    """Replace run.json whole; on a write error (disk full) the previous one stays, RunFileError says why."""
    path = run_dir / schema.RUN_JSON
    tmp = path.with_suffix(".json.tmp")
    try:
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunFileError(path, exc) from None


def read_run_json(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / schema.RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


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


def command_line() -> list[str]:
    """The command as typed, with the value of anything that looks like a secret masked: a secret
    option's value, and inside --target-cmd/--sim-args (one string each) their secret values too."""
    words = redact_args(sys.argv)
    return [redact_command(w) if i and words[i - 1] in COMMAND_FLAGS else w for i, w in enumerate(words)]
