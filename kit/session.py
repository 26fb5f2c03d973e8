"""What outlives one run in a Locust process: the target, a master's fleet, and the names of the runs it
has had (each start in the web UI is a new run: `--run-id ID` and `--run-dir DIR` name the first, then
ID-2, DIR-2...).

Naming and bookkeeping only: starting and stopping runs is kit.runtime's.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kit import input_checks, rundir
from kit.fleet import Fleet
from kit.settings import RUNS_ROOT, RunNames
from lifecycle.target import Target


@dataclass
class Session:
    target: Target
    named: RunNames  # --run-id (None: one generated per run), --run-dir (None: runs/<run-id>), --html
    fleet: Fleet | None = None  # on a master: its side of the fleet protocol
    dirs: dict[str, Path] = field(default_factory=dict)  # every run so far, by run id
    quitting: bool = False  # the process is shutting down: no new run begins
    fresh: set[str] = field(default_factory=set)  # runs whose directory this session made (none before)

    def next_run(self, first_id: str, first_dir: Path) -> tuple[str, Path]:
        """The next run's id and its (created) directory; the first run's are the settings' own (checked
        at start-up). A later run skips a name whose directory an earlier session left non-empty."""
        if not self.dirs:
            run_id, run_dir = first_id, first_dir
        else:
            n = len(self.dirs) + 1
            run_id, run_dir = self._later(n)
            while run_dir.is_dir() and any(run_dir.iterdir()):
                n += 1
                run_id, run_dir = self._later(n)
        if self.named.run_dir is None:
            input_checks.under_root(run_dir, RUNS_ROOT)
        if not run_dir.exists():
            self.fresh.add(run_id)
        self.dirs[run_id] = rundir.create_run_dir(run_dir)
        return run_id, run_dir

    def discard(self, run_id: str) -> None:
        """A run refused before it began (a sampler service that does not answer): the directory it made
        goes, so a refused option leaves nothing behind; one that was there before is the user's."""
        run_dir = self.dirs.pop(run_id, None)
        if run_dir is not None and run_id in self.fresh:
            shutil.rmtree(run_dir, ignore_errors=True)

    def _later(self, n: int) -> tuple[str, Path]:
        given_id, given_dir = self.named.run_id, self.named.run_dir
        run_id = f"{given_id}-{n}" if given_id else rundir.new_run_id()
        return run_id, Path(f"{given_dir}-{n}") if given_dir else RUNS_ROOT / run_id
