"""The sampler's options: one dataclass shared by the command line (parse) and the launcher (to_argv).

Validates values up front (a bad one is a one-line UsageError, exit 2); does not look at processes.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import NoReturn
from urllib.parse import urlsplit

from contract.cli import positive_duration
from contract.errors import InputError

MIN_INTERVAL_S = 0.05  # 20 Hz; 10 Hz is the rate promised


class UsageError(InputError):
    """A bad option value; its message is the one line printed before exit 2."""


@dataclass
class SamplerOptions:
    out: str
    pids: list[int] = field(default_factory=list)
    matches: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    interval: float = 1.0
    pss_every: int = 0  # 0 = never read PSS/USS
    tree_refresh_s: float = 2.0
    queue_url: str | None = None
    queue_field: str | None = None
    inflight_field: str | None = None
    queue_age_field: str | None = None  # the age (s) of a cached queue reading, where the source says
    sidecar_pids: list[int] = field(default_factory=list)
    sidecar_matches: list[str] = field(default_factory=list)
    loadgen_pid: int | None = None
    duration: float | None = None
    wait_for_target: bool = False  # processes that appear later (a gateway started after the sampler)
    transient_target: bool = False  # processes the load generator's agents start and end (stdio servers)
    host_label: str | None = None  # the `host` cell; None: this machine's hostname
    # Which of --match's processes count (sampler/selection.py's Scope): one tree unless --match-all
    match_user: str | None = None
    match_cwd: str | None = None
    match_env: str | None = None  # NAME=VALUE
    match_all: bool = False

    @property
    def has_target(self) -> bool:
        return bool(self.pids or self.matches or self.cgroups)

    def to_argv(self) -> list[str]:
        """Command-line arguments that parse back to these options."""
        argv = ["--out", self.out, "--interval", repr(self.interval), "--pss-every", str(self.pss_every)]
        argv += ["--tree-refresh-s", repr(self.tree_refresh_s)]
        for flag, values in _REPEATED.items():
            for value in getattr(self, values):
                argv += [flag, str(value)]
        for flag, name in _FLAGS.items():
            if getattr(self, name):
                argv.append(flag)
        for flag, name in _SINGLE.items():
            value = getattr(self, name)
            if value is not None:
                argv += [flag, str(value)]
        return argv


_FLAGS = {
    "--wait-for-target": "wait_for_target",
    "--transient-target": "transient_target",
    "--match-all": "match_all",
}
_REPEATED = {
    "--pid": "pids",
    "--match": "matches",
    "--cgroup": "cgroups",
    "--sidecar-pid": "sidecar_pids",
    "--sidecar-match": "sidecar_matches",
}
_SINGLE = {
    "--queue-url": "queue_url",
    "--queue-field": "queue_field",
    "--inflight-field": "inflight_field",
    "--queue-age-field": "queue_age_field",
    "--loadgen-pid": "loadgen_pid",
    "--duration": "duration",
    "--host-label": "host_label",
    "--match-user": "match_user",
    "--match-cwd": "match_cwd",
    "--match-env": "match_env",
}


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m sampler", description="Side sampler: writes samples.csv row by row.")
    p.add_argument("--out", required=True, help="CSV to append to (header: contract.schema.SAMPLE_COLUMNS)")
    add_reading_options(p)
    return p


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """What to watch and how often: shared by `python -m sampler` and `python -m sampler serve`."""
    p.add_argument("--pid", dest="pids", type=int, action="append", default=[], help="a pid and its tree")
    p.add_argument("--match", dest="matches", action="append", default=[], help="command-line regex")
    p.add_argument("--cgroup", dest="cgroups", action="append", default=[], help="cgroup directory")
    p.add_argument(
        "--interval", type=positive_duration, default=1.0, help="time between readings (1s, 100ms)"
    )
    p.add_argument("--pss-every", type=int, default=0, help="read PSS/USS every Nth reading (0 = off)")
    p.add_argument(
        "--tree-refresh-s", type=positive_duration, default=2.0, help="time between process-set walks"
    )
    p.add_argument("--queue-url", help="gateway JSON endpoint with the queue figures")
    p.add_argument("--queue-field", help="dotted path of the queue length in that JSON")
    p.add_argument("--inflight-field", help="dotted path of the in-progress count")
    p.add_argument("--queue-age-field", help="dotted path of the reading's age in seconds (a cached source)")
    p.add_argument("--sidecar-pid", dest="sidecar_pids", type=int, action="append", default=[])
    p.add_argument("--sidecar-match", dest="sidecar_matches", action="append", default=[])
    p.add_argument("--loadgen-pid", type=int, help="exit (after a last row) when this pid is gone")
    p.add_argument("--duration", type=positive_duration, help="stop after this long (30s, 2m, 1h)")
    p.add_argument(
        "--wait-for-target",
        action="store_true",
        help="start even if no process matches yet (--match/--cgroup targets that appear later)",
    )
    p.add_argument(
        "--transient-target",
        action="store_true",
        help="the matched processes come and go (stdio servers of the agents): none left is not an exit",
    )
    p.add_argument("--host-label", help="the `host` cell of every row (default: this machine's hostname)")
    p.add_argument("--match-user", help="--match counts only this user's processes")
    p.add_argument("--match-cwd", help="--match counts only processes working in this directory")
    p.add_argument("--match-env", help="--match counts only processes whose environment has NAME=VALUE")
    p.add_argument(
        "--match-all",
        action="store_true",
        help="--match counts every matching process tree (default: more than one unrelated tree is refused)",
    )


def parse(argv: list[str]) -> SamplerOptions:
    """Parse and validate; raises UsageError with a one-line message."""
    opts = SamplerOptions(**vars(_parser().parse_args(argv)))
    validate(opts)
    return opts


def validate(opts: SamplerOptions) -> None:
    if not (opts.has_target or opts.queue_url or opts.loadgen_pid):
        raise UsageError(
            "no target: give at least one of --pid, --match, --cgroup (or --queue-url / --loadgen-pid alone)"
        )
    if not opts.interval >= MIN_INTERVAL_S:
        raise UsageError(f"--interval must be >= {MIN_INTERVAL_S} s, got {opts.interval}")
    if opts.pss_every < 0:
        raise UsageError(f"--pss-every must be >= 0, got {opts.pss_every}")
    if not opts.tree_refresh_s > 0:
        raise UsageError(f"--tree-refresh-s must be > 0, got {opts.tree_refresh_s}")
    if opts.duration is not None and not opts.duration > 0:
        raise UsageError(f"--duration must be > 0, got {opts.duration}")
    for pid in [*opts.pids, *opts.sidecar_pids, opts.loadgen_pid]:
        if pid is not None and pid <= 0:
            raise UsageError(f"a pid must be positive, got {pid}")
    for pattern in [*opts.matches, *opts.sidecar_matches]:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"bad regex {pattern!r}: {exc}") from None
    if opts.match_env is not None and not opts.match_env.partition("=")[0]:
        raise UsageError(f"--match-env must be NAME=VALUE, got {opts.match_env!r}")
    _validate_queue(opts)


def _validate_queue(opts: SamplerOptions) -> None:
    if opts.queue_url is None:
        if opts.queue_field or opts.inflight_field or opts.queue_age_field:
            raise UsageError("--queue-field/--inflight-field/--queue-age-field need --queue-url")
        return
    parts = urlsplit(opts.queue_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--queue-url must be an http(s) URL, got {opts.queue_url!r}")
    if not opts.queue_field:
        raise UsageError("--queue-url needs --queue-field (dotted path, e.g. queue.n_pending)")
