"""Everything a run does before load starts: apply the gateway preset, check every option, start (or
find) the target and the side sampler, describe them for run.json. Bad input ends here, with one line
and exit code 2, before any load or process is left behind.
"""

from __future__ import annotations

import logging
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import gevent
from locust.env import Environment

from agents import presets as gateways
from analysis.prices import PriceTableError, load_prices
from contract import exit_codes, schema
from kit import rundir
from lifecycle.target import Target, free_port, simulator_command, start_target, target_command
from sampler.launch import start_sampler
from sampler.options import SamplerOptions, UsageError
from scenarios import registry
from scenarios.errors import ProfileConfigError, ThresholdConfigError

log = logging.getLogger("loadkit")
TREE_REFRESH_MIN_S = 0.5  # re-finding the target's processes costs ~3 ms (FIELD-NOTES)


class KitInputError(Exception):
    """Bad input found before any load started; the message is one line for the user."""


def profile_name(options) -> str:
    """--load-profile; else Locust's own --profile label when it names one of ours; else Locust's
    -u/-r/-t (the web UI form sets them) drive the manual profile; else a bounded smoke run."""
    if getattr(options, "load_profile", None):
        return options.load_profile
    label = getattr(options, "profile", None)
    if label in registry.PROFILE_NAMES:
        return label
    if options.num_users or options.run_time:
        return "manual"
    return "smoke"


def check_config(options, distributed: bool = False) -> None:
    """Build the profile and thresholds and load the price table once, to surface every config error
    before any load or process starts. A serial driver (capacity, churn) is one user reading the target
    after each step: it is refused on a master, whose users would run on any worker."""
    try:
        profile = registry.build_profile(profile_name(options), options)
        if distributed and (getattr(profile, "driver", None) or hasattr(profile, "plan")):
            raise ProfileConfigError(
                f"--load-profile {profile.name} runs in one process (a serial driver, or rounds counted "
                "in one place): run it without --master/--worker/--processes"
            )
        registry.build_thresholds(options)
        if options.prices:
            load_prices(options.prices)
    except (ProfileConfigError, ThresholdConfigError, PriceTableError) as exc:
        fail_input(str(exc))


def apply_gateway_preset(environment: Environment, options) -> gateways.GatewayPreset:
    """Fill unset options from the --gateway preset and run its agent classes, unless the command line
    named classes itself (Locust's positional user classes win)."""
    try:
        chosen = gateways.preset(options.gateway)
        classes = gateways.agent_classes(chosen)
    except gateways.GatewayError as exc:
        fail_input(str(exc))
    if options.health_path is None:
        options.health_path = chosen.health_path
    options.session_header = options.session_header or chosen.session_header
    options.api_key_env = options.api_key_env or chosen.api_key_env
    for name, value in chosen.defaults.items():
        if getattr(options, name, None) is None:
            setattr(options, name, value)
    if not options.user_classes:
        environment.user_classes[:] = classes
    return chosen


def fail_input(message: str) -> None:
    sys.stderr.write(f"loadkit: error: {message}\n")
    sys.exit(exit_codes.BAD_INPUT)


def resolve_target(options) -> Target:
    """--host alone: a running gateway; --target-cmd: start one; neither: start the simulator. ACP
    agents are processes the agents launch themselves: no URL."""
    if options.gateway == "acp":
        if not options.acp_command:
            raise KitInputError(
                '--gateway acp needs --acp-command "COMMAND" (the agent each simulated agent runs)'
            )
        return Target(url="")
    if options.host and not options.target_cmd:
        return Target(url=options.host.rstrip("/"))
    port = free_port()
    url = (options.host or "http://127.0.0.1:{port}").replace("{port}", str(port)).rstrip("/")
    if options.target_cmd:
        command = target_command(options.target_cmd, port)
    elif options.gateway == "simulator":
        command = simulator_command(port, options.sim_args)
    else:
        raise KitInputError(f"--gateway {options.gateway} needs --host URL or --target-cmd")
    return start_target(command, url, options.health_path, options.start_timeout)


def sampler_options(options, target: Target, run_dir: Path) -> SamplerOptions | None:
    """What the side sampler watches: the local target, else the gateway's queue alone, else (with a
    remote sampler service) only the load generator; None when there is nothing to watch. With
    --sampler-url the service watches the target: local target rows would mix two hosts' readings."""
    pids, matches, cgroups = local_target(options, target)
    queue_url, queue_field, inflight_field = queue_probe(options, target)
    if not (pids or matches or cgroups or (queue_url and queue_field) or options.sampler_url):
        return None
    return SamplerOptions(
        out=str(run_dir / schema.SAMPLES_CSV),
        pids=pids,
        matches=matches,
        cgroups=cgroups,
        interval=options.sample_interval,
        pss_every=options.pss_every,
        tree_refresh_s=max(options.sample_interval, TREE_REFRESH_MIN_S),
        queue_url=queue_url if queue_field else None,
        queue_field=queue_field if queue_url else None,
        inflight_field=inflight_field if queue_url else None,
        sidecar_pids=list(options.sidecar_pid or []),
        sidecar_matches=list(options.sidecar_match or []),
        wait_for_target=not pids and options.gateway == "acp",
    )


def local_target(options, target: Target) -> tuple[list[int], list[str], list[str]]:
    """Pids, patterns and cgroups of the target on this host; none when a sampler service watches it."""
    named = options.target_pid or options.target_match or options.target_cgroup
    if options.sampler_url:
        if named:
            raise KitInputError(
                "--target-pid/--target-match/--target-cgroup name processes on this host; with --sampler-url "
                "give them to `python -m sampler serve` on the gateway's host"
            )
        return [], [], []
    pids = ([target.pid] if target.pid else []) + list(options.target_pid or [])
    matches = list(options.target_match or [])
    if options.gateway == "acp" and not matches:
        matches = [acp_pattern(options.acp_command)]  # the agents' own child processes
    return pids, matches, list(options.target_cgroup or [])


def queue_probe(options, target: Target) -> tuple[str | None, str | None, str | None]:
    """--queue-url and fields as given, else the preset's probe on the target."""
    if options.queue_url:
        return options.queue_url, options.queue_field, options.inflight_field
    probe = gateways.preset(options.gateway).queue
    if probe is None or not target.url:
        return None, None, None
    return f"{target.url}{probe.path}", probe.queue_field, probe.in_progress_field


def acp_pattern(command: str) -> str:
    """A regex for the ACP agent processes: their arguments (an interpreter path may be rewritten by
    shims), or the program's name when it has none."""
    words = shlex.split(command)
    return re.escape(" ".join(words[1:])) if len(words) > 1 else re.escape(Path(words[0]).name)


def start_side_sampler(options, target: Target, run_dir: Path) -> subprocess.Popen | None:
    """Start the side sampler and wait for its first row; fail with one line if it refuses to run."""
    sampler_opts = sampler_options(options, target, run_dir)
    if not ((sampler_opts and sampler_opts.has_target) or options.sampler_url):
        log.warning("loadkit: no --target-pid/--target-match/--target-cgroup: target resources not sampled")
    if sampler_opts is None:
        return None
    try:
        popen = start_sampler(sampler_opts, stderr=subprocess.PIPE)
    except UsageError as exc:
        raise KitInputError(f"sampler: {exc}") from None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and popen.poll() is None and not Path(sampler_opts.out).exists():
        time.sleep(0.05)
    if popen.poll() is not None and popen.returncode != 0:
        lines = popen.stderr.read().decode(errors="replace").strip().splitlines() or ["exited"]
        raise KitInputError(f"sampler: {lines[-1]}")
    gevent.spawn(_relay_stderr, popen)
    return popen


def _relay_stderr(popen: subprocess.Popen) -> None:
    for raw in popen.stderr:
        line = raw.decode(errors="replace")
        sys.stderr.write(line if line.startswith("sampler") else f"sampler: {line}")


def initial_meta(options, target: Target) -> dict:
    return {
        "run_id": options.run_id,
        "kit_version": rundir.KIT_VERSION,
        "created_ts": time.time(),
        "command": rundir.command_line(),
        "versions": rundir.versions(),
        "host": rundir.host_facts(),
        "target": {
            "url": target.url,
            "gateway": options.gateway,
            "started_by_kit": target.started_by_kit,
            "command": target.command,
            "pid": target.pid,
        },
        "profile": {},
        "thresholds": [],
        "cost": {
            "prices": str(Path(options.prices).resolve()) if options.prices else None,
            "host_price_month": options.host_price,
        },
    }
