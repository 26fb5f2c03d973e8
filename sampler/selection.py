"""How a target is chosen, the ways gateways are run: a pid and its tree, a command-line regex, a cgroup.

Each selector only finds pids (slow: walks /proc or reads cgroup.procs), says why it counts each one and
when its target is gone; reading the processes and summing them is targets.py's job.

A regex is scoped (`Scope`): on a shared host it matches other users' gateways, a second gateway of the
same user, and the kit's own processes (a child the load generator forks carries the load generator's
command line, which holds the regex, until it execs). The kit's process tree is never counted, and
matches in more than one unrelated tree (another user or working directory) are refused at the first
match unless the user picks one or says they all count.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import psutil

from sampler import cgroupfs

SAMPLER_HINT = (
    "--match-user NAME, --match-cwd DIR, --match-env NAME=VALUE or --pid PID, or count them all with "
    "--match-all"
)
TREE_COMMAND_CHARS = 60  # enough of a tree root's command line to tell two gateways apart


class TargetNotFound(Exception):
    """The target named on the command line does not exist (bad input: exit 2)."""


@dataclass(frozen=True)
class Tree:
    """The processes a regex matched under one topmost matched process (the tree's root)."""

    root: int
    user: str
    cwd: str
    origin: str  # "child of pid N" (the root's parent), or "session N" for a root that init adopted
    command: str
    pids: frozenset[int]

    @property
    def key(self) -> tuple[str, str, str]:
        """Trees of one user, working directory and origin (one parent: a gateway's workers, the kit's
        agents' processes each in a session of its own) are one gateway's; another user, directory or
        parent is another gateway (a worker that left by a double fork too: --target-match-all counts
        it)."""
        return self.user, self.cwd, self.origin

    def describe(self) -> str:
        n = len(self.pids)
        return (
            f"pid {self.root} (user {self.user}, cwd {self.cwd}, {self.origin}, "
            f"{n} process{'es' if n > 1 else ''}): {self.command[:TREE_COMMAND_CHARS]}"
        )


class AmbiguousTarget(TargetNotFound):
    """A regex matching in more than one unrelated tree: which one is the target is the user's to say."""

    def __init__(self, pattern: str, trees: list[Tree]) -> None:
        self.pattern, self.trees = pattern, trees
        super().__init__(self.message(SAMPLER_HINT))

    def message(self, hint: str) -> str:
        listed = "; ".join(t.describe() for t in self.trees)
        return (
            f"{self.pattern!r} matches {len(self.trees)} unrelated process trees: {listed}; pick one with "
            f"{hint}"
        )


@dataclass(frozen=True)
class Scope:
    """Which of a regex's matches are the target. The kit's tree (`kit_root`, the load generator, and
    every descendant: its workers, the sampler, each child it forks, before and after exec) never is,
    save the trees of the gateway the kit started (`kit_targets`). When the target is the processes the
    kit's own agents launch (`kit_launches`: stdio servers), only the kit's processes still carrying the
    load generator's command line (its forked workers, a child before its exec) are left out."""

    user: str | None = None
    cwd: str | None = None
    env: str | None = None  # NAME=VALUE in the process's environment: every tree carrying it is the target
    match_all: bool = False  # every matching tree counts (no refusal, no locking onto the first)
    kit_root: int | None = None
    kit_targets: frozenset[int] = frozenset()
    kit_launches: bool = False

    def admits(self, process: psutil.Process) -> bool:
        """The process passes --target-user/--target-cwd/--target-env (False when they cannot be read)."""
        try:
            if self.user is not None and process.username() != self.user:
                return False
            if self.cwd is not None and os.path.realpath(process.cwd()) != os.path.realpath(self.cwd):
                return False
            if self.env is not None:
                name, _, value = self.env.partition("=")
                return process.environ().get(name) == value
        except psutil.Error:
            return False
        return True

    def kit_pids(self, table: dict[int, tuple[int, list[str]]]) -> set[int]:
        """The kit's own processes in `table` (pid -> ppid, argv)."""
        if self.kit_root is None or self.kit_root not in table:
            return set()
        kit = _descendants(self.kit_root, table) - set().union(
            *(_descendants(pid, table) for pid in self.kit_targets)
        )
        if self.kit_launches:
            own = table[self.kit_root][1]
            kit = {pid for pid in kit if pid == self.kit_root or table[pid][1] == own}
        return kit


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

    def why(self, pid: int) -> str:
        return f"pid {self.root}" if pid == self.root else f"in the tree of pid {self.root}"

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
    fork). Never matches the sampler itself, its ancestors, other samplers, pids in `exclude`, or the
    kit's tree (`scope`). The first match decides which trees are the target: one (or, with
    `scope.match_all`, all); a later unrelated tree (another user's gateway started mid-run) is not."""

    def __init__(self, pattern: str, exclude: set[int] | None = None, scope: Scope | None = None) -> None:
        super().__init__()
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.label = f"processes matching {pattern!r}"
        self.scope = scope or Scope()
        self._exclude = _own_lineage() | (exclude or set())
        self._keys: set[tuple[str, str, str]] | None = None  # the trees chosen at the first match
        self._why: dict[int, str] = {}
        self._trees: dict[int, Tree] = {}  # by root: user and cwd read once per root
        self._admitted: dict[int, bool] = {}

    def pids(self) -> set[int]:
        table = _process_table()
        kit = self.scope.kit_pids(table)
        matched = {
            pid
            for pid, (_, argv) in table.items()
            if pid not in self._exclude and pid not in kit and not _is_sampler(argv)
            if self.regex.search(" ".join(argv)) and self._admits(pid)
        }
        trees = self._group(matched, table)
        if not (self.scope.match_all or self.scope.env):  # an environment value names one gateway
            if self._keys is None and trees:
                if len({t.key for t in trees}) > 1:
                    raise AmbiguousTarget(self.pattern, trees)
                self._keys = {t.key for t in trees}
            trees = [t for t in trees if t.key in (self._keys or set())]
        self._why = {pid: self._reason(t) for t in trees for pid in t.pids}
        return self._note(set(self._why))

    def why(self, pid: int) -> str:
        return self._why.get(pid, self.label)

    def _reason(self, tree: Tree) -> str:
        return f"matches {self.pattern!r} (tree of pid {tree.root}, user {tree.user}, cwd {tree.cwd})"

    def _admits(self, pid: int) -> bool:
        if pid not in self._admitted:
            try:
                self._admitted[pid] = self.scope.admits(psutil.Process(pid))
            except psutil.Error:
                return False
        return self._admitted[pid]

    def _group(self, matched: set[int], table: dict[int, tuple[int, list[str]]]) -> list[Tree]:
        """The matched pids by tree: each under its topmost matched ancestor."""
        members: dict[int, set[int]] = {}
        for pid in matched:
            root = pid
            while table.get(root, (0, []))[0] in matched:
                root = table[root][0]
            members.setdefault(root, set()).add(pid)
        self._trees = {root: self._trees.get(root) or _tree(root, table) for root in members}
        self._admitted = {pid: ok for pid, ok in self._admitted.items() if pid in table}
        return [
            Tree(t.root, t.user, t.cwd, t.origin, t.command, frozenset(members[root]))
            for root, t in self._trees.items()
        ]


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

    def why(self, pid: int) -> str:
        return f"in cgroup {self.path}"


def _own_lineage() -> set[int]:
    """This process and its ancestors: their command lines carry the regex, so they would match it."""
    pids = {os.getpid()}
    try:
        pids |= {p.pid for p in psutil.Process().parents()}
    except psutil.Error:
        pass
    return pids


def _process_table() -> dict[int, tuple[int, list[str]]]:
    """Every process now: pid -> (ppid, argv); one walk of /proc."""
    return {
        proc.pid: (proc.info["ppid"] or 0, proc.info["cmdline"] or [])
        for proc in psutil.process_iter(["ppid", "cmdline"])
    }


def _descendants(root: int, table: dict[int, tuple[int, list[str]]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root] if root in table else []
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += children.get(pid, [])
    return found


def _tree(root: int, table: dict[int, tuple[int, list[str]]]) -> Tree:
    """A tree's root as the refusal lists it: its user, working directory, origin and command."""
    user = cwd = "?"
    try:
        process = psutil.Process(root)
        user = process.username()
        cwd = process.cwd()
    except psutil.Error:
        pass  # another user's process: its cwd is not ours to read ("?")
    parent = table[root][0]
    origin = f"child of pid {parent}" if parent > 1 else f"session {_session(root)}"
    return Tree(root, user, cwd, origin, " ".join(table[root][1]), frozenset())


def _session(pid: int) -> int | str:
    try:
        return os.getsid(pid)
    except OSError:
        return "?"


def _is_sampler(argv: list[str]) -> bool:
    return any(a == "-m" and b == "sampler" for a, b in zip(argv, argv[1:], strict=False))
