"""How a target is chosen, the ways gateways are run: a pid and its tree, a command-line regex, a cgroup.

Each selector only finds pids (slow: walks /proc or reads cgroup.procs) and says when its target is gone;
reading the processes and summing them is targets.py's job.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import psutil

from sampler import cgroupfs


class TargetNotFound(Exception):
    """The target named on the command line does not exist (bad input: exit 2)."""


class TreeSelector:
    """A root pid and all its descendants. Gone when the root exits (or is a zombie)."""

    def __init__(self, root: int) -> None:
        if not psutil.pid_exists(root):
            raise TargetNotFound(f"no process with pid {root}")
        self.root = root
        self.label = f"pid {root}"

    def pids(self) -> set[int]:
        try:
            return {self.root} | {p.pid for p in psutil.Process(self.root).children(recursive=True)}
        except psutil.NoSuchProcess:
            return set()

    def gone(self, live: set[int]) -> bool:
        return self.root not in live


class _EverMatched:
    """Shared rule of pattern and cgroup selectors: gone when nothing is left after something matched."""

    def __init__(self) -> None:
        self._matched = False
        self._last: set[int] = set()

    def _note(self, pids: set[int]) -> set[int]:
        self._matched = self._matched or bool(pids)
        self._last = pids
        return pids

    def gone(self, live: set[int]) -> bool:
        return self._matched and not (self._last & live)


class PatternSelector(_EverMatched):
    """Processes whose command line matches a regex: finds workers that left the tree (setsid, double
    fork). Never matches the sampler itself, its ancestors, other samplers, or pids in `exclude`."""

    def __init__(self, pattern: str, exclude: set[int] | None = None) -> None:
        super().__init__()
        self.regex = re.compile(pattern)
        self.label = f"processes matching {pattern!r}"
        self._exclude = _own_lineage() | (exclude or set())

    def pids(self) -> set[int]:
        found = set()
        for proc in psutil.process_iter(["cmdline"]):
            argv = proc.info["cmdline"] or []
            if proc.pid in self._exclude or _is_sampler(argv):
                continue
            if self.regex.search(" ".join(argv)):
                found.add(proc.pid)
        return self._note(found)


class CgroupSelector(_EverMatched):
    """The processes of a cgroup directory (v1 or v2); its memory files are read by cgroupfs."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = Path(path)
        if not cgroupfs.is_cgroup(self.path):
            raise TargetNotFound(f"not a cgroup directory (no cgroup.procs): {path}")
        self.label = f"cgroup {path}"

    def pids(self) -> set[int]:
        return self._note(cgroupfs.read_procs(self.path))


def _own_lineage() -> set[int]:
    """This process and its ancestors: their command lines carry the regex, so they would match it."""
    pids = {os.getpid()}
    try:
        pids |= {p.pid for p in psutil.Process().parents()}
    except psutil.Error:
        pass
    return pids


def _is_sampler(argv: list[str]) -> bool:
    return any(a == "-m" and b == "sampler" for a, b in zip(argv, argv[1:], strict=False))
