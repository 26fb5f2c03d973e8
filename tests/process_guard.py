"""Fails a test that starts a process (itself or through a fixture) without the `e2e` marker, so the unit
set (`-m "not e2e and not gateways and not faults"`) stays fast. Loaded by `-p tests.process_guard`.

It watches Python's audit events for new processes (os.fork — gevent's subprocess forks —, posix_spawn,
os.system, subprocess.Popen), so no test can start one unseen; it never stops a process from starting.
"""

from __future__ import annotations

import os
import sys
import traceback

import pytest

SPAWN_EVENTS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.system", "subprocess.Popen"})
MARKER = "e2e"
# A library's own helper process, not the test's: matplotlib runs fc-list once while its font cache is cold.
LIBRARY_HELPERS = (f"{os.sep}matplotlib{os.sep}",)

_spawns: list[str] = []  # where each process was started, in this process's order
_MAIN_PID = os.getpid()
SPAWNS_BEFORE = pytest.StashKey[int]()
SPAWNING_FIXTURES = pytest.StashKey[set[str]]()


def _where() -> str:
    """The innermost frame of the kit or its tests that led to the spawn."""
    frames = [f for f in traceback.extract_stack()[:-2] if "site-packages" not in f.filename]
    frames = [f for f in frames if not f.filename.endswith(("process_guard.py", "subprocess.py", "os.py"))]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def _on_audit(event: str, args: tuple) -> None:
    if event not in SPAWN_EVENTS or os.getpid() != _MAIN_PID:
        return
    stack = "".join(f.filename for f in traceback.extract_stack())
    if any(helper in stack for helper in LIBRARY_HELPERS):
        return
    what = f"{event} {os.path.basename(str(args[0]))}" if event == "subprocess.Popen" and args else event
    _spawns.append(f"{what} at {_where()}")


sys.addaudithook(_on_audit)  # once per process: audit hooks cannot be removed


def spawns_since(index: int) -> list[str]:
    return _spawns[index:]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SPAWNING_FIXTURES] = set()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    """Remember fixtures that start a process: every test using one needs the marker, not only the
    first (a module-scoped server is started once)."""
    before = len(_spawns)
    result = yield
    if len(_spawns) > before:
        request.config.stash[SPAWNING_FIXTURES].add(fixturedef.argname)
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[SPAWNS_BEFORE] = len(_spawns)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield  # a test that failed already is reported as it failed
    if item.get_closest_marker(MARKER) is None:
        started = spawns_since(item.stash.get(SPAWNS_BEFORE, len(_spawns)))
        fixtures = sorted(item.config.stash[SPAWNING_FIXTURES] & set(getattr(item, "fixturenames", ())))
        if started or fixtures:
            reason = "; ".join(started[:3]) if started else f"fixture(s) {', '.join(fixtures)} started one"
            pytest.fail(
                f"this test starts a process ({reason}) but is not marked {MARKER}: add "
                f"@pytest.mark.{MARKER} (or a module-level pytestmark) so the unit set stays fast",
                pytrace=False,
            )
    return result
