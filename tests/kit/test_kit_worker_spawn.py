"""A worker with the kit's options handles Locust's spawn message with at most one argument-parser build
(Locust 2.47 builds one per option), in under 20 ms, and keeps exactly the options Locust itself keeps.

A real master and worker (Locust's own runners over loopback) in this process; the spawn message is the
one the master sends (its parsed options, as `MasterRunner` ships them).
"""

from __future__ import annotations

import time

import pytest
from locust import argument_parser
from locust.env import Environment
from locust.rpc import Message

from agents.gateways.openai_chat import ChatAgent
from kit import options as kit_options
from kit import worker_spawn
from lifecycle.target import free_port
from scenarios import registry
from tests.machine_noise import NoiseWindow, Take, judge, retake

pytestmark = pytest.mark.e2e  # a Locust master and worker on loopback
SPAWN_BAR_MS = 20.0
SPAWN_CAP_MS = 50.0  # under half what Locust alone costs here (114 ms of CPU at load average 6)


def kit_parsed_options(*argv: str):
    """Locust's parser with the kit's options, as the locustfile registers them."""
    parser = argument_parser.get_empty_argument_parser(default_config_files=[])
    argument_parser.setup_parser_arguments(parser)
    kit_options.add_arguments(parser)
    registry.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture
def worker():
    """A worker runner connected to a master runner, both with the kit's options; quit after."""
    port = free_port()
    master_env = Environment(user_classes=[ChatAgent], parsed_options=kit_parsed_options())
    master = master_env.create_master_runner("127.0.0.1", port)
    worker_env = Environment(user_classes=[ChatAgent], parsed_options=kit_parsed_options())
    runner = worker_env.create_worker_runner("127.0.0.1", port)
    yield runner
    runner.quit()
    master.quit()


def spawn_message(*argv: str) -> Message:
    """A spawn message as the master sends it (with no user to start: only the message is measured)."""
    job = {
        "timestamp": time.time(),
        "host": "http://127.0.0.1:9",
        "stop_timeout": None,
        "user_classes_count": {},
        "parsed_options": vars(kit_parsed_options(*argv)),
    }
    return Message("spawn", job, "master")


@pytest.fixture
def parser_builds(monkeypatch):
    """Counts Locust argument-parser builds (setup_parser_arguments calls) from here on."""
    counted = {"builds": 0}
    setup = argument_parser.setup_parser_arguments

    def counting(parser):
        counted["builds"] += 1
        return setup(parser)

    monkeypatch.setattr(argument_parser, "setup_parser_arguments", counting)
    monkeypatch.setattr(argument_parser, "default_args_dict", argument_parser.default_args_dict)  # restored
    return counted


def builds_handling(worker, counted: dict, message: Message) -> int:
    """Parser builds while the worker handles `message` (built beforehand: building it builds one)."""
    before = counted["builds"]
    worker.handle_message(message)
    return counted["builds"] - before


def test_locust_alone_builds_its_parser_once_per_option_of_a_spawn_message(worker, parser_builds):
    message = spawn_message()
    assert builds_handling(worker, parser_builds, message) == len(message.data["parsed_options"]) > 100


def test_with_the_kit_a_spawn_message_costs_at_most_one_parser_build(worker, parser_builds):
    worker_spawn.install()
    for message in (spawn_message(), spawn_message("--peak-users", "7")):
        assert builds_handling(worker, parser_builds, message) <= 1


def test_the_cached_parser_keeps_exactly_the_options_locust_keeps(worker, parser_builds):
    """The worker's options after a spawn message, Locust's own way and the cached way, are the same."""
    argv = ("--peak-users", "7", "--request-timeout", "9", "--tags", "chat")
    worker.handle_message(spawn_message(*argv))
    by_locust = dict(vars(worker.environment.parsed_options))
    worker.environment.parsed_options = kit_parsed_options()
    worker_spawn.install()
    worker.handle_message(spawn_message(*argv))
    assert vars(worker.environment.parsed_options) == by_locust
    assert by_locust["peak_users"] == "7" and by_locust["tags"] == ["chat"]
    assert argument_parser.default_args_dict() == argument_parser.default_args_dict.__wrapped__()


@pytest.mark.timing
def test_a_spawn_message_takes_under_20ms_on_a_worker_with_the_kit(worker, parser_builds):
    worker_spawn.install()

    def handling_ms_and_bar() -> Take:
        noise = NoiseWindow()
        message = spawn_message()
        started = time.perf_counter()
        worker.handle_message(message)
        took = (time.perf_counter() - started) * 1000.0
        noise.close()
        return [noise.reading("spawn message handling", took, SPAWN_BAR_MS, SPAWN_CAP_MS)]

    assert all(r.passed for r in judge(retake(handling_ms_and_bar)))
