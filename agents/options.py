"""The agents' common options (every protocol reads them through AgentSettings), declared beside the
settings they fill: each `add(...)` (contract/cli.py) holds the flag, default, help, start-form group and
the conversion into its AgentSettings field, whose name is the option's dest.

The protocols' own options are their sub-rooms' (agents/gateways/options.py, agents/mcp/options.py),
recorded sessions' agents/replay/options.py; `declared()` registers them all on a parser of their own,
so the settings (kit/settings.py) can tell an agent option that fills no field.
"""

from __future__ import annotations

import argparse
from typing import Any

import configargparse

from agents.gateways import options as gateway_options
from agents.loop.session_policy import session_policy, session_policy_arg
from agents.replay import options as replay_options
from agents.settings import DEFAULTS
from contract.cli import add, duration, positive_whole, size
from contract.schema import MIB


def add_arguments(parser: Any) -> None:
    """The "loadkit: agents" group: what every agent sends and how long it waits."""
    agents = parser.add_argument_group("loadkit: agents")
    add(
        agents,
        "--api-key-env",
        default=None,
        help="name of the environment variable holding the gateway's API key (never stored)",
    )
    add(
        agents,
        "--request-timeout",
        form_group="agents",
        convert=duration,
        default=None,
        help="time a request may take, connect to last byte, streams included, before it is a timeout "
        f"row, e.g. 30s (default {DEFAULTS.request_timeout:g}s)",
    )
    add(
        agents,
        "--max-response-bytes",
        convert=size,
        default=None,
        help="largest answer body read, e.g. 64MiB; beyond it the request is a too_large row, read no "
        f"further (default {DEFAULTS.max_response_bytes // MIB} MiB)",
    )
    add(
        agents,
        "--max-sse-line-bytes",
        convert=size,
        default=None,
        help="longest event-stream (SSE) line read, e.g. 1MiB; beyond it the request is a too_large row "
        f"(default {DEFAULTS.max_sse_line_bytes // MIB} MiB)",
    )
    add(
        agents,
        "--model",
        form_group="agents",
        default=None,
        help="model name sent to the gateway (default: the preset's)",
    )
    add(agents, "--prompt", form_group="agents", default=None, help="prompt text agents send")
    add(
        agents,
        "--max-tokens",
        form_group="agents",
        convert=positive_whole,
        default=None,
        help=f"max_tokens asked per chat call (default {DEFAULTS.max_tokens})",
    )
    add(
        agents,
        "--poll-interval",
        form_group="agents",
        convert=duration,
        default=None,
        help=f"time between task status polls, e.g. 3s, 500ms (default {DEFAULTS.poll_interval:g}s)",
    )
    add(
        agents,
        "--task-timeout",
        form_group="agents",
        convert=duration,
        default=None,
        help=f"time a task may take before it is recorded as timeout, e.g. 15m "
        f"(default {DEFAULTS.task_timeout:g}s)",
    )
    add(
        agents,
        "--no-cleanup",
        dest="cleanup",
        action="store_false",
        default=DEFAULTS.cleanup,
        help="leave what the run created on the gateway (default: remove it; only what carries our run id)",
    )
    add(
        agents,
        "--session-header",
        default=None,
        help="session stickiness: a header name (X-Hermes-Session-Id...) or 'user' (default: the preset's)",
    )
    add(
        agents,
        "--session-policy",
        form_group="profile",
        type=session_policy_arg,
        convert=session_policy,
        default=DEFAULTS.session_policy,
        help="how long an agent keeps a gateway session: sticky (whole run), fresh (new per task) or N turns",
    )
    add(
        agents,
        "--backpressure-ok",
        action="store_true",
        default=DEFAULTS.backpressure_ok,
        help="count HTTP 429 as a success in Locust's stats (it stays a backpressure row in requests.csv)",
    )


def declared() -> list[argparse.Action]:
    """Every option the agents' rooms declare, registered on a parser of their own: the settings see what
    Locust's parser sees, a renamed option included."""
    parser = configargparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    replay_options.add_arguments(parser)
    gateway_options.add_arguments(parser)
    return [action for action in parser._actions if action.option_strings]
