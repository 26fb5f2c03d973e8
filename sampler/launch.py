"""Starts and stops the sampler as a separate OS process, for the locustfile and the capacity profile.

Only process handling: options come as SamplerOptions, nothing is measured here.
"""

from __future__ import annotations

import os
import signal
import subprocess

from contract.child_env import kit_module_command, kit_module_env
from sampler.options import SamplerOptions, validate


def start_sampler(opts: SamplerOptions, stderr: int | None = None) -> subprocess.Popen:
    """Validate, then start `python -m sampler` in its own session (a Ctrl-C meant for Locust does not
    cut the sampler short; it exits by itself when `loadgen_pid` - by default the caller - is gone)."""
    if opts.loadgen_pid is None:
        opts = SamplerOptions(**{**vars(opts), "loadgen_pid": os.getpid()})
    validate(opts)
    return subprocess.Popen(
        kit_module_command("sampler", *opts.to_argv()),
        env=kit_module_env(),
        stderr=stderr,
        start_new_session=True,
    )


def stop_sampler(proc: subprocess.Popen, timeout_s: float = 5.0) -> int:
    """SIGTERM (the sampler finishes its row and exits 0); SIGKILL the group if it overstays."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()
