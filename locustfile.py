"""Load, capacity and cost testing kit for AI agent gateways: the Locust entry point.

Thin by design: it registers the kit's options, exposes the agents and the one load shape, and
forwards Locust's events to kit.runtime. With no --host it starts the simulated gateway itself.
    locust -f locustfile.py --headless                      # smoke run against the simulator
    locust -f locustfile.py --headless --load-profile stress    # a k6-style profile
"""

# ruff: noqa: E402 - the signal handlers first, then every other import
import functools

from kit import startup_signals

startup_signals.install()  # first: from here on a signal leaves a record (docs/run-endings.md)

from locust import LoadTestShape, events

from agents.capacity.drivers import CapacityAgent, ChurnAgent  # noqa: F401 - run by --load-profile capacity/churn
from agents.capacity.idle_agents import SessionAgent  # noqa: F401

# Every agent class, so any can be named on the command line (`locust -f locustfile.py TaskAgent`);
# without names, the --gateway preset decides which run (kit.startup.choose_agents).
from agents.gateways.a2a import A2AAgent  # noqa: F401
from agents.gateways.acp import AcpAgent  # noqa: F401
from agents.gateways.hermes_kanban import HermesKanbanAgent  # noqa: F401 - needs the Hermes CLI (--hermes-command)
from agents.gateways.hermes_runs import HermesRunsAgent  # noqa: F401
from agents.gateways.langgraph import LangGraphAgent  # noqa: F401
from agents.gateways.openai_chat import ChatAgent  # noqa: F401
from agents.gateways.openclaw import OpenClawChatAgent, OpenClawResponsesAgent  # noqa: F401
from agents.gateways.responses import ResponsesAgent  # noqa: F401
from agents.gateways.spec import SpecAgent  # noqa: F401
from agents.gateways.task_board import TaskAgent  # noqa: F401
from agents.mcp.agent import McpAgent  # noqa: F401
from agents.replay.recorded_agent import ReplayAgent  # noqa: F401 - run with --sessions FILE
from kit import options, runs, runtime
from scenarios import registry


@events.init_command_line_parser.add_listener
def _add_options(parser):
    options.add_arguments(parser)
    registry.add_arguments(parser)


@events.init.add_listener
def _on_init(environment, **_kwargs):
    runs.setup(environment)
    # Locust's quit event names no environment: its listener is bound to this one
    environment.events.quit.add_listener(functools.partial(_on_quit, environment))


@events.test_start.add_listener
def _on_test_start(environment, **_kwargs):
    if run := runtime.run_of(environment):
        run.on_test_start()
    else:
        runs.on_worker_test_start(environment)


@events.test_stop.add_listener
def _on_test_stop(environment, **_kwargs):
    if run := runtime.run_of(environment):
        run.on_test_stop()


@events.quitting.add_listener
def _on_quitting(environment, **_kwargs):
    if run := runtime.run_of(environment):
        run.on_quitting()


def _on_quit(environment, exit_code, **_kwargs):
    if run := runtime.run_of(environment):
        run.on_quit(exit_code)


class KitShape(LoadTestShape):
    """The one shape: delegates every tick to the profile chosen with --load-profile."""

    use_common_options = True  # the manual profile reads -u/-r/-t itself

    def tick(self):
        run = runs.run_for_tick(self.runner.environment)  # a new start in the web UI: a new run
        return run.shape_tick(self.get_run_time()) if run else None
