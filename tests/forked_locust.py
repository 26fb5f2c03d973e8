"""Run many `locust -f locustfile.py ...` command lines cheaply, for the bad-input corpus: import Locust
and the kit once, then fork one child per command line that runs Locust's own main() exactly as the
`locust` command does. Reads cases as JSON on stdin, prints results as JSON; not a test module.

A case: {"argv": [...], "env": {...}, "cwd": DIR, "out": DIR}; a result: {"code", "stderr", "stdout"}.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

import locust.main  # Locust (and gevent's monkey-patching) once, as the `locust` command imports it

REPO = Path(__file__).resolve().parent.parent  # run as a script: tests.paths is not importable yet
sys.path.insert(0, str(REPO))
# The kit's rooms the locustfile imports; the locustfile itself is loaded by Locust in each child.
import agents.gateways.a2a  # noqa: E402, F401
import kit.runtime  # noqa: E402, F401

CASE_TIMEOUT_S = 120.0
CRASHED = 70  # a child that raised instead of exiting (never a kit exit code)


def run_child(case: dict) -> None:
    """In the forked child: Locust's main() with the case's argv, env and cwd; never returns."""
    code = CRASHED
    try:
        os.chdir(case["cwd"])
        os.environ.update(case["env"])
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(Path(case["out"]) / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.argv = ["locust", *case["argv"]]
        locust.main.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # reported as a traceback on the case's stderr
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_case(case: dict) -> dict:
    Path(case["out"]).mkdir(parents=True, exist_ok=True)
    pid = os.fork()
    if pid == 0:
        run_child(case)
    deadline = time.monotonic() + CASE_TIMEOUT_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = None
            break
        time.sleep(0.02)
    out = Path(case["out"])
    return {
        "code": code,
        "stderr": (out / "stderr").read_text(errors="replace"),
        "stdout": (out / "stdout").read_text(errors="replace"),
    }


def main() -> None:
    cases = json.load(sys.stdin)
    print(json.dumps([run_case(case) for case in cases]))


if __name__ == "__main__":
    main()
