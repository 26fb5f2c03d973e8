"""The error types a user sees before any load starts: a bad profile option, threshold or workload.

Each carries ONE line naming where the problem is and what is wrong; nothing here prints or exits.
"""

from __future__ import annotations

from contract.errors import InputError


class ProfileConfigError(InputError):
    """A load-profile option cannot be used (unknown profile, malformed duration, impossible shape)."""


class ThresholdConfigError(InputError):
    """A threshold (NFR) in a file or a --threshold option cannot be parsed or makes no sense."""


class WorkloadError(InputError):
    """A workload option or file (workload TOML, dataset, trace) cannot be used; the line names the file,
    the line and the field."""
