"""Everything a run does before load starts, from its settings: choose the agents, start (or find) the
target and the side sampler, describe them for run.json. Any KitError ends here (`fail`), with one line
and its exit code, before any load or process is left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import gevent
import psutil
from locust.env import Environment

from agents import presets as gateways
from agents.wire.target_origin import with_userinfo
from contract import exit_codes, schema
from contract.child_env import kit_module_env
from contract.errors import DiskError, InputError, KitError, one_line
from contract.redact import LOG_FILTER, add_secret, redact, redact_args
from contract.schema import STREAMS_PER_PROCESS
from kit import input_checks, rundir
from kit.settings import KitSettings, options_of
from kit.tags import keep_tagged_classes
from lifecycle.target import Target, free_port, simulator_command, start_target, target_command
from sampler.launch import start_sampler
from sampler.loop import scope_of
from sampler.options import SamplerOptions, UsageError, validate
from sampler.selection import AmbiguousTarget, PatternSelector
from scenarios import registry

log = logging.getLogger("loadkit")
SCOPE_HINT = (
    "--target-user NAME, --target-cwd DIR, --target-env NAME=VALUE or --target-pid PID, or count them all "
    "with --target-match-all"
)
SCOPE_OPTIONS = ("target_user", "target_cwd", "target_env", "target_match_all")
TREE_REFRESH_MIN_S = 0.5  # re-finding the target's processes costs ~3 ms (docs/sampler.md)
SAMPLER_POLL_S = 0.01  # a stat() a poll; every run's start waits on the sampler's first row


def fail(error: KitError) -> NoReturn:
    """The one place an error becomes an exit: one line on stderr, the error's own exit code; the
    workers this process forked (--processes) go with it."""
    sys.stderr.write(f"loadkit: error: {redact(one_line(error))}\n")
    stop_forked_workers()
    sys.exit(error.exit_code)


def stop_forked_workers(timeout_s: float = 5.0) -> None:
    """End the `--processes` workers of a master that ends before its run: forks carrying its command
    line. Locust stops them only from a master that ran; a refused one left them waiting for it
    ("Failed to connect to master") for minutes."""
    me = psutil.Process()
    try:
        forks = [c for c in me.children() if c.cmdline() == me.cmdline()]
    except psutil.Error:
        return
    for child in forks:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    psutil.wait_procs(forks, timeout=timeout_s)


def register_secrets(settings: KitSettings) -> None:
    """The run's secret values, masked in every row, line, log and report: the API key, and --host's
    password (alone, and as the Basic credentials a gateway might echo)."""
    add_secret(os.environ.get(settings.agent.api_key_env or ""))
    if (auth := settings.target.host_auth) is not None:
        add_secret(auth.password)
        add_secret(auth.basic_token())
    log.addFilter(LOG_FILTER)


def choose_agents(environment: Environment, settings: KitSettings) -> None:
    """Run the preset's agent classes (ReplayAgent with --sessions), unless the command line named classes
    itself (Locust's positional user classes win), minus those --tags/--exclude-tags leave without a task;
    the program an agent class runs (its `program_run`, e.g. --hermes-command's) must be found."""
    replaying = settings.agent.sessions is not None
    classes = (
        [gateways.resolve_class(gateways.REPLAY)] if replaying else gateways.agent_classes(settings.preset)
    )
    options = options_of(environment)
    if not options.user_classes:
        environment.user_classes[:] = classes
    if not replaying and any(getattr(c, "needs_sessions", False) for c in environment.user_classes):
        raise InputError("ReplayAgent replays a session file: add --sessions FILE (kit.capture records one)")
    tags, exclude = getattr(options, "tags", None), getattr(options, "exclude_tags", None)
    environment.user_classes[:] = keep_tagged_classes(environment.user_classes, tags, exclude)
    for user in environment.user_classes:
        if runs := getattr(user, "program_run", lambda _settings: None)(settings.agent):
            input_checks.program(user.__name__, *runs)


def refuse_ignored_options(settings: KitSettings) -> None:
    """An option the profile does not read is refused before anything starts (InputError, exit 2): a
    `--duration` given to breakpoint was silently ignored, the run not the one asked for."""
    if ignored := registry.ignored_options(settings.profile_name, settings.profile):
        raise InputError(
            f"{', '.join(ignored)} not read by --load-profile {settings.profile_name}: drop "
            f"{'it' if len(ignored) == 1 else 'them'} (docs/profiles.md lists what each profile reads)"
        )


def warn_before_load(settings: KitSettings, processes: int) -> None:
    """What the user should know before load starts, said once every input check has passed (bad input
    is one line and nothing else): an unset key variable; more agents per load-generator process (of
    `processes`) than one process times well."""
    if warning := gateways.key_warning(settings.agent.api_key_env, os.environ):
        sys.stderr.write(f"loadkit: warning: {warning}\n")
    if note := streams_note(settings.built_profile.peak_users(), processes):
        sys.stderr.write(f"loadkit: note: {note}\n")


def streams_note(peak_users: int, processes: int) -> str | None:
    """The line said when the profile's peak puts more agents in one load-generator process than the
    streams one process times well (analysis/validity.py's rule, measured in docs/benchmarks.md)."""
    per_process = math.ceil(peak_users / max(processes, 1))
    if per_process <= STREAMS_PER_PROCESS:
        return None
    enough = math.ceil(peak_users / STREAMS_PER_PROCESS)
    return (
        f"up to {per_process} agents in one load-generator process; past {STREAMS_PER_PROCESS:g} streams in "
        f"flight one process's own TTFT error grows (its tail first): --processes {enough} spreads them "
        "(cores allowing; agents that think between requests stream fewer at once)"
    )


def refuse_distributed(settings: KitSettings) -> None:
    """A serial driver (capacity, churn: one user reading the target after each step) and a profile
    that says so (the sweep measures its rates as it goes) run in one process: refused on a master or
    a worker."""
    profile = settings.built_profile
    if profile.one_process:
        why = "a serial driver" if profile.driver else "it measures its own rates as it goes"
        raise InputError(
            f"--load-profile {profile.name} runs in one process ({why}): "
            "run it without --master/--worker/--processes"
        )


def resolve_target(settings: KitSettings, cancelled: Callable[[], bool] = lambda: False) -> Target:
    """--host alone: a running gateway; --target-cmd: start one; neither: the preset's embedded
    simulator. Agents that launch their own processes and speak over their stdio need no URL. A start
    `cancelled` (a signal) meanwhile is stopped (TargetError)."""
    target, preset = settings.target, settings.preset
    stdio = gateways.stdio_command(preset, settings.agent)
    if preset.stdio_agents and not stdio:
        flag = preset.stdio_flag
        raise InputError(f'--gateway {preset.name} needs {flag} "COMMAND" (the process each agent runs)')
    if stdio:
        return Target(url="")
    if target.host and not target.target_cmd:
        if target.host_check:
            input_checks.host_answers(target.host, target.health_path)
        return Target(url=target.host)
    port = free_port()
    url = (target.host or "http://127.0.0.1:{port}").replace("{port}", str(port)).rstrip("/")
    if target.target_cmd:  # the user's gateway, in the user's environment
        command = target_command(target.target_cmd, port)
        return start_target(command, url, target.health_path, target.start_timeout, cancelled=cancelled)
    if preset.embedded_simulator:  # our own module: found from any working directory
        command = simulator_command(port, simulator_args(settings))
        health = target.health_path or "/health"  # the simulator's, whatever the preset checks mid-run
        return start_target(command, url, health, target.start_timeout, kit_module_env(), cancelled)
    raise InputError(f"--gateway {preset.name} needs --host URL or --target-cmd")


def simulator_args(settings: KitSettings) -> str:
    """The user's --sim-args, and the MCP endpoint loaded before the simulator says it is ready when the run
    calls it (loaded on first use otherwise: seconds a timed run would spend waiting on its first session)."""
    loop = settings.agent.workload.tool_loop
    calls_mcp = settings.preset.calls_mcp or (loop is not None and loop.tools.mcp_url is not None)
    return f"{settings.target.sim_args} --mcp-preload" if calls_mcp else settings.target.sim_args


def sampler_options(settings: KitSettings, target: Target) -> SamplerOptions | None:
    """What the side sampler watches: the local target, else the gateway's queue alone, else (with a
    remote sampler service) only the load generator; None when there is nothing to watch. With
    --sampler-url the service watches the target: local target rows would mix two hosts' readings."""
    agent, stdio = settings.agent, bool(gateways.stdio_command(settings.preset, settings.agent))
    pids, matches, cgroups = local_target(settings, target)
    queue_url, queue_field, inflight_field, age_field = queue_probe(settings, target)
    if not (pids or matches or cgroups or (queue_url and queue_field) or agent.sampler_url):
        return None
    interval = settings.target.sample_interval
    return SamplerOptions(
        out=str(settings.run_dir / schema.SAMPLES_CSV),
        pids=pids,
        matches=matches,
        cgroups=cgroups,
        interval=interval,
        pss_every=settings.target.pss_every,
        tree_refresh_s=max(interval, TREE_REFRESH_MIN_S),
        queue_url=queue_url if queue_field else None,
        queue_field=queue_field if queue_url else None,
        inflight_field=inflight_field if queue_url else None,
        queue_age_field=age_field if queue_url else None,
        sidecar_pids=list(agent.sidecar_pid),
        sidecar_matches=list(agent.sidecar_match),
        transient_target=not pids and stdio,
        match_user=agent.target_user,
        match_cwd=agent.target_cwd,
        match_env=agent.target_env or preset_scope(settings),
        match_all=agent.target_match_all,
    )


def preset_scope(settings: KitSettings) -> str | None:
    """The preset's scope of --target-match: its gateway's processes carry the variable (HERMES_HOME) the
    kit's own environment gives the gateway it was pointed at; None when the kit's environment has none."""
    name = settings.preset.match_env
    value = os.environ.get(name) if name else None
    return f"{name}={value}" if value else None


def local_target(settings: KitSettings, target: Target) -> tuple[list[int], list[str], list[str]]:
    """Pids, patterns and cgroups of the target on this host; none when a sampler service watches it."""
    agent = settings.agent
    if agent.sampler_url:
        if agent.target_pid or agent.target_match or agent.target_cgroup:
            raise InputError(
                "--target-pid/--target-match/--target-cgroup name processes on this host; with --sampler-url "
                "give them to `python -m sampler serve` on the gateway's host"
            )
        return [], [], []
    pids = ([target.pid] if target.pid else []) + list(agent.target_pid)
    matches = list(agent.target_match)
    command = gateways.stdio_command(settings.preset, agent)
    if command and not matches:
        matches = [stdio_pattern(command)]  # the agents' own child processes
    return pids, matches, list(agent.target_cgroup)


LAUNCHERS = frozenset({"env", "npx", "uvx", "bunx", "pnpx"})  # they run the program their arguments name
OPTIONS_WITH_VALUE = frozenset(
    {"-C", "--chdir", "-u", "--unset", "-p", "--package", "--from", "--with", "--python"}
)


def queue_probe(settings: KitSettings, target: Target) -> tuple[str | None, ...]:
    """--queue-url and fields as given, else the preset's probe on the target: URL, queue, in-progress
    and reading-age fields."""
    given = settings.target
    if given.queue_url:
        return given.queue_url, given.queue_field, given.inflight_field, None
    probe = settings.preset.queue
    if probe is None or not target.url:
        return None, None, None, None
    url = with_userinfo(target.url, given.host_auth)  # the probe is on --host: its Basic auth too
    return f"{url}{probe.path}", probe.queue_field, probe.in_progress_field, probe.age_field


def stdio_pattern(command: str) -> str:
    """A regex for the agents' stdio processes (ACP agents, MCP servers): through a launcher (`npx -y
    PKG`, `uvx PKG`, `env ... CMD`), the name of what it launches, which every process of the chain
    carries (npx's node, its shell, the server's node); else their arguments (an interpreter path may be
    rewritten by shims), or the program's name when it has none."""
    words = shlex.split(command)
    if (program := launched(words)) is not None:
        return re.escape(program)
    return re.escape(" ".join(words[1:])) if len(words) > 1 else re.escape(Path(words[0]).name)


def launched(words: list[str]) -> str | None:
    """The name of the program or package a launcher command runs (None: not a launcher): its first
    word past the launcher's options and VAR=value settings, a package's scope and version dropped."""
    if not words or Path(words[0]).name not in LAUNCHERS:
        return None
    rest = iter(words[1:])
    for word in rest:
        if word in OPTIONS_WITH_VALUE:
            next(rest, None)
        elif not word.startswith("-") and "=" not in word:
            inner = launched([word, *rest])
            if inner is not None:
                return inner
            name = Path(word[0] + word[1:].split("@")[0]).name  # @scope/pkg@1.2 -> pkg
            return name or None
    return None


def check_sampler_options(settings: KitSettings) -> None:
    """The side sampler's options as the user gave them (interval, patterns, pids, the queue probe),
    checked before a target starts or the run directory is made: refused later by the sampler itself,
    they left both behind. The target is not started yet: one the kit starts stands in as this pid."""
    given = settings.target
    token_env = settings.agent.sampler_token_env
    if settings.agent.sampler_url and not os.environ.get(token_env):
        raise InputError(f"--sampler-url needs the sampler service's token in ${token_env}")
    if bool(given.queue_url) != bool(given.queue_field):  # else dropped by sampler_options, unread
        raise UsageError(
            "sampler: --queue-url and --queue-field go together (the URL and the field it reads)"
        )
    if given.inflight_field and not given.queue_url:
        raise UsageError("sampler: --inflight-field needs --queue-url (and --queue-field)")
    agent = settings.agent
    if not agent.target_match and any(getattr(agent, name) for name in SCOPE_OPTIONS):
        raise InputError(
            "--target-user/--target-cwd/--target-env/--target-match-all choose among --target-match's "
            "processes: add --target-match REGEX"
        )
    kit_starts_target = bool(given.target_cmd) or not given.host
    opts = sampler_options(
        settings, Target(settings.target.host or "", os.getpid() if kit_starts_target else None)
    )
    if opts is None:
        return
    try:
        validate(dataclasses.replace(opts, loadgen_pid=os.getpid()))
    except UsageError as exc:
        raise UsageError(f"sampler: {exc}") from None


def start_side_sampler(settings: KitSettings, target: Target) -> subprocess.Popen | None:
    """Start the side sampler and wait for its first row; fail with one line if it refuses to run."""
    sampler_opts = sampler_options(settings, target)
    if not ((sampler_opts and sampler_opts.has_target) or settings.agent.sampler_url):
        log.warning("loadkit: no --target-pid/--target-match/--target-cgroup: target resources not sampled")
    if sampler_opts is None:
        return None
    refuse_unrelated_trees(sampler_opts)
    try:
        popen = start_sampler(sampler_opts, stderr=subprocess.PIPE)
    except UsageError as exc:
        raise UsageError(f"sampler: {exc}") from None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and popen.poll() is None and not Path(sampler_opts.out).exists():
        time.sleep(SAMPLER_POLL_S)
    if popen.poll() is not None and popen.returncode != 0:
        said = popen.stderr.read() if popen.stderr else b""  # started with stderr=PIPE
        lines = said.decode(errors="replace").strip().splitlines() or ["exited"]
        refused = DiskError if popen.returncode == exit_codes.DISK_ERROR else InputError
        raise refused(f"sampler: {lines[-1]}")
    gevent.spawn(_relay_stderr, popen)
    return popen


def refuse_unrelated_trees(opts: SamplerOptions) -> None:
    """A --target-match whose matches fall in unrelated trees (another user's gateway, a second one in
    another directory) is refused before the sampler starts, naming the trees and the kit's options that
    pick one (the sampler refuses too, naming its own)."""
    scope = scope_of(dataclasses.replace(opts, loadgen_pid=os.getpid()))
    for pattern in opts.matches:
        try:
            PatternSelector(pattern, scope=scope).pids()
        except AmbiguousTarget as exc:
            raise InputError(f"--target-match {exc.message(SCOPE_HINT)}") from None


def _relay_stderr(popen: subprocess.Popen) -> None:
    for raw in popen.stderr or ():
        line = redact(raw.decode(errors="replace"))
        sys.stderr.write(line if line.startswith("sampler") else f"sampler: {line}")


def initial_meta(settings: KitSettings, target: Target) -> dict:
    return {
        "run_id": settings.run_id,
        "kit_version": rundir.KIT_VERSION,
        "created_ts": time.time(),
        "command": rundir.command_line(),
        "versions": rundir.versions(),
        "host": rundir.host_facts(),
        "target": {
            "url": target.url,
            "gateway": settings.preset.name,
            "started_by_kit": target.started_by_kit,
            # the kit's own simulator: its sessions live in its memory and end with it (kit.cleanup)
            "kit_simulator": target.started_by_kit and not settings.target.target_cmd,
            "command": redact_args(target.command) if target.command else None,
            "pid": target.pid,
            "sampled": rundir.sampled_target(settings.agent, target),
            "mcp_url": settings.agent.mcp_url,  # where kit.cleanup closes MCP sessions a run left open
        },
        "profile": {},
        "thresholds": [],
        "trend_min_duration_s": settings.target.trend_min_duration,
        "cost": {
            "prices": str(Path(settings.prices).resolve()) if settings.prices else None,
            "host_price_month": settings.host_price,
        },
    }
