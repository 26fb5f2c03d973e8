"""What outlives one run in a Locust process: the target and the names of the runs it has had (each
start in the web UI is a new run: `--run-id ID` and `--run-dir DIR` name the first, then ID-2, DIR-2...).

Naming and bookkeeping only: starting and stopping runs is kit.runtime's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kit import rundir
from lifecycle.target import Target


@dataclass
class Session:
    run_id: str | None  # --run-id as given (None: generate one per run)
    run_dir: str | None  # --run-dir as given (None: runs/<run-id>)
    html_file: str | None  # --html as given (None: each run's own locust_report.html)
    target: Target | None = None
    dirs: dict[str, Path] = field(default_factory=dict)  # every run so far, by run id

    def next_run(self) -> tuple[str, Path]:
        """The next run's id and its (created) directory."""
        suffix = f"-{len(self.dirs) + 1}" if self.dirs else ""
        run_id = f"{self.run_id}{suffix}" if self.run_id else rundir.new_run_id()
        run_dir = rundir.create_run_dir(f"{self.run_dir}{suffix}" if self.run_dir else None, run_id)
        self.dirs[run_id] = run_dir
        return run_id, run_dir
