"""A run directory that cannot be written (disk full, I/O error): one line naming the file and cause, the
run stopped with DISK_ERROR, and a small reserve of space given back so run.json and the report still fit.

The reserve is a preallocated file in the run directory, made before anything starts (a disk with no
room for it refuses the run: exit 5), deleted at the first write error and at the end of every run.
Decides nothing about the run itself: it tells its caller which failure was the first.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from pathlib import Path

from contract.csv_append import RunFileError
from contract.errors import DiskError

log = logging.getLogger("loadkit")
RESERVE_NAME = ".loadkit-reserve"
RESERVE_BYTES = 512 * 1024  # run.json, Locust's CSVs and report.md need well under this
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS)  # a disk that cannot take the run's record


class DiskGuard:
    def __init__(self, run_dir: Path):
        """Reserve the space; DiskError when the disk cannot take even that (other failures, such as a
        filesystem without fallocate, only warn)."""
        self.reserve = Path(run_dir) / RESERVE_NAME
        self.failure: str | None = None
        try:
            fd = os.open(self.reserve, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.errno in FULL:
                self.release()
                raise DiskError(f"{RunFileError(self.reserve, exc)}: the run directory has no room") from None
            log.warning("loadkit: no space reserved for the run's record: %s", exc.strerror or exc)

    def failed(self, error: RunFileError | str, said: bool = False) -> bool:
        """True at the first write error: the reserve freed, said on one line (unless another process
        `said` it); later ones are consequences of the first and only logged."""
        message = str(error)
        if self.failure is not None:
            log.debug("loadkit: %s", message)
            return False
        self.failure = message
        self.release()
        if not said:
            sys.stderr.write(f"loadkit: error: {message}\n")
        return True

    def release(self) -> None:
        try:
            self.reserve.unlink()
        except FileNotFoundError:
            pass
