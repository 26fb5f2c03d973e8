"""The run's own command-line options (target, sampler, run directory, cost), registered on Locust's own
parser (so they also live in locust.conf, LOCUST_* environment variables and, where marked, the web UI
start form), and every room's options in the order --help shows them.

Each option is one `add(...)` call (contract/cli.py) beside the code that reads it: its flag, type,
default, help, start-form group, workload-file key and conversion into its setting, which the parser,
the web form, the workload reader, the settings (kit/settings.py) and docs/options.md all read. The
agents' are agents/options.py's and its sub-rooms' (gateways, mcp, replay), the workload's
scenarios/workloads/options.py's, the profiles' scenarios/registry.py's.
"""

from __future__ import annotations

from agents import options as agent_options
from agents.gateways import options as gateway_options
from agents.replay import options as replay_options
from contract import trend_rule
from contract.cli import add, positive_duration, positive_float, positive_int, sequence, whole
from scenarios.workloads import options as workload_options

WEB_HOST = "127.0.0.1"  # the kit's default for Locust's --web-host (Locust's own: all interfaces)
# Options shown in the web UI form are text defaulting to None: Locust converts a form value to the type
# of the option's current value, so "" for a float would fail inside Locust; the settings (kit/settings.py)
# convert and check them by their declared `convert` (an empty field: the default in agents/settings.py).


def add_arguments(parser) -> None:
    """Target, sampler, run-directory and cost options, and the agents' and the workload's (profiles
    add their own through scenarios/registry.py); the web UI and a master's port for its workers bound
    to 127.0.0.1 unless --web-host/--master-bind-host (or LOCUST_*, locust.conf) say otherwise."""
    parser.set_defaults(web_host=WEB_HOST, master_bind_host=WEB_HOST)
    target = parser.add_argument_group("loadkit: target", "what to load and watch")
    add(
        target,
        "--gateway",
        default="simulator",
        help="gateway preset (protocol, health check, queue probe); default: simulator",
    )
    add(
        target,
        "--sim-args",
        default="",
        help='knobs for the embedded simulated gateway, e.g. "--ttft-ms 300 --max-in-progress 6"',
    )
    add(
        target,
        "--target-cmd",
        default=None,
        help="command that starts a fresh target for this run; {port} is replaced by a free port",
    )
    add(
        target,
        "--health-path",
        default=None,
        help="path answered 2xx when the target is up (default: the preset's, /health for the simulator)",
    )
    add(
        target,
        "--no-host-check",
        dest="host_check",
        action="store_false",
        default=True,
        help="do not check that --host answers before load starts (for gateways that answer late)",
    )
    add(
        target,
        "--start-timeout",
        type=positive_duration,
        default=30.0,
        help="how long to wait for a started target to become healthy, e.g. 30s, 2m (default 30s)",
    )
    add(
        target,
        "--liveness-timeout",
        type=positive_duration,
        default=10.0,
        help="how long the target's health check may fail or go unanswered mid-run before the run stops "
        "with exit code 3 (a frozen gateway); default 10s",
    )
    add(
        target,
        "--target-pid",
        type=positive_int,
        action="append",
        convert=sequence,
        default=None,
        help="sample this pid and its process tree (repeatable)",
    )
    add(
        target,
        "--target-match",
        action="append",
        convert=sequence,
        default=None,
        help="sample processes whose command line matches this regex (repeatable)",
    )
    add(
        target,
        "--target-cgroup",
        action="append",
        convert=sequence,
        default=None,
        help="sample this cgroup directory (v1 or v2; repeatable)",
    )
    add(target, "--target-user", default=None, help="--target-match counts only this user's processes")
    add(
        target,
        "--target-cwd",
        default=None,
        help="--target-match counts only processes whose working directory is this one",
    )
    add(
        target,
        "--target-env",
        default=None,
        metavar="NAME=VALUE",
        help="--target-match counts only processes whose environment has NAME=VALUE (e.g. HERMES_HOME=...)",
    )
    add(
        target,
        "--target-match-all",
        action="store_true",
        default=False,
        help="--target-match counts every matching process tree (default: matches in more than one "
        "unrelated tree, another user's or working directory's, are refused at start)",
    )
    add(
        target,
        "--sidecar-pid",
        type=positive_int,
        action="append",
        convert=sequence,
        default=None,
        help="measure this process apart from the target (repeatable)",
    )
    add(
        target,
        "--sidecar-match",
        action="append",
        convert=sequence,
        default=None,
        help="measure processes matching this regex apart from the target (repeatable)",
    )

    sampler = parser.add_argument_group("loadkit: sampler", "target-host resources beside the load")
    add(
        sampler,
        "--sample-interval",
        type=positive_duration,
        default=1.0,
        help="time between sampler readings, e.g. 1s, 100ms for 10 Hz (default 1s)",
    )
    add(
        sampler,
        "--trend-min-duration",
        type=positive_duration,
        default=trend_rule.MIN_DURATION_S,
        help=f"a soak verdict (leak, drift, slope thresholds) needs >= {trend_rule.MIN_POINTS} samples "
        f"spanning this long after the first {100 * trend_rule.WARMUP_FRACTION:.0f} %% of the run "
        f"(default {trend_rule.clock(trend_rule.MIN_DURATION_S)}: at 1 s samples a run of >= "
        f"{trend_rule.clock(trend_rule.TrendData(trend_rule.MIN_DURATION_S, 1.0).shortest_run_s)}); "
        "a soak too short for it is refused",
    )
    add(
        sampler,
        "--pss-every",
        type=whole,
        default=0,
        help="read PSS/USS every Nth sample (costly; 0 = never)",
    )
    add(
        sampler,
        "--queue-url",
        default=None,
        help="JSON endpoint with the gateway's queue (default: the preset's)",
    )
    add(sampler, "--queue-field", default=None, help="dotted path of the queue length in that JSON")
    add(sampler, "--inflight-field", default=None, help="dotted path of the in-progress count in that JSON")
    add(
        sampler,
        "--model-calls-url",
        default=None,
        help="the kit's simulator serving as the gateway's model: every call it answers -> model_calls.csv",
    )
    add(
        sampler,
        "--sampler-url",
        action="append",
        convert=sequence,
        default=None,
        help="URL of a sampler service on the gateway's host (`python -m sampler serve`; repeatable)",
    )
    add(
        sampler,
        "--sampler-token-env",
        default="LOADKIT_SAMPLER_TOKEN",
        help="environment variable holding the sampler service's token (never stored)",
    )

    run = parser.add_argument_group("loadkit: run directory")
    add(run, "--run-dir", default=None, help="where this run's files go (default runs/<run-id>)")
    add(
        run,
        "--run-id",
        default=None,
        help="run id tagged on everything the kit creates: letters, digits, . _ - (default: generated)",
    )
    add(
        run,
        "--reuse-run-dir",
        action="store_true",
        default=False,
        help="write into a non-empty --run-dir (refused by default: two runs' rows would mix)",
    )

    agent_options.add_arguments(parser)
    replay_options.add_arguments(workload_options.add_arguments(parser))
    gateway_options.add_arguments(parser)

    cost = parser.add_argument_group("loadkit: cost")
    add(
        cost,
        "--prices",
        default=None,
        help="price table (TOML) to cost the run with (default: prices.toml shipped with the kit)",
    )
    add(
        cost,
        "--host-price",
        type=positive_float,
        default=None,
        help="$ per month of the machine under test, for $ per agent-hour and per task",
    )
