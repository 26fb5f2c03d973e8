"""The kit's one error base: every error a user may see carries its exit code and a one-line message.

Rooms subclass these; the orchestrator (kit/) maps any KitError to its exit code in one place. Nothing
here prints or exits.
"""

from __future__ import annotations

from typing import ClassVar

from contract import exit_codes


class KitError(Exception):
    """An error that ends a run with `exit_code`; str(error) is one line for the user."""

    exit_code: ClassVar[int] = exit_codes.BAD_INPUT


class InputError(KitError, ValueError):
    """Bad input (option, file, target at start), found before any load: exit 2."""

    exit_code: ClassVar[int] = exit_codes.BAD_INPUT


class TargetDiedError(KitError):
    """The gateway under test exited or stopped answering: exit 3."""

    exit_code: ClassVar[int] = exit_codes.TARGET_DIED


class DiskError(KitError):
    """The run directory's filesystem cannot take the run's record (full, I/O error): exit 5."""

    exit_code: ClassVar[int] = exit_codes.DISK_ERROR


def one_line(error: BaseException) -> str:
    """The error's message on one line (a multi-line message keeps its first line)."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
