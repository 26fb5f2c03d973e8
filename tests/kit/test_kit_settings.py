"""Settings parsed once: Locust's real parser (command line, LOCUST_*, a config file, the web form's
strings) into typed, frozen settings; one error base with exit codes; preset flags; one profile protocol.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from locust.env import Environment

from agents import presets
from agents.base import KitAgent
from agents.run_context import context_of, new_context
from agents.settings import DEFAULTS, AgentSettings
from analysis.prices import PriceTableError
from contract import exit_codes
from contract.errors import InputError, KitError, TargetDiedError
from kit import input_checks
from kit.settings import read_settings, refresh
from kit.startup import choose_agents, resolve_target, sampler_options
from lifecycle.target import TargetError
from sampler.options import UsageError
from scenarios import registry
from scenarios.errors import ProfileConfigError, ThresholdConfigError
from scenarios.pacing import OpenModelPacing, Pacing, RoundsPacing, pacing_for
from tests.paths import REPO

GIB = 1024**3


def settings_of(options):
    return read_settings(options, "run-1")


def test_defaults_come_from_one_place(parse):
    settings = settings_of(parse())
    expected = dataclasses.replace(
        DEFAULTS, run_id="run-1", run_dir=Path("runs/run-1"), session_header="user"
    )
    assert settings.agent == expected  # the simulator preset names its session convention
    assert settings.agent.capacity.memory_budget_bytes == GIB
    assert settings.profile_name == "smoke" and settings.preset.name == "simulator"


def test_settings_are_frozen(parse):
    settings = settings_of(parse())
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.agent.model = "other"  # type: ignore[misc]


def test_command_line_values_arrive_typed(parse):
    settings = settings_of(
        parse("--memory-budget", "512MiB", "--max-agents", "7", "--target-pid", "11", "--target-pid", "12")
    )
    assert settings.agent.capacity.memory_budget_bytes == 512 * 1024**2
    assert settings.agent.capacity.max_agents == 7 == settings.profile.max_agents
    assert settings.agent.target_pid == (11, 12)


def test_empty_web_form_values_give_the_documented_defaults(parse):
    """The web form sends "" for a cleared field: the default, never a traceback later in a driver."""
    options = parse("--load-profile", "capacity")
    cleared = ("memory_budget", "capacity_at_n", "churn_cycles", "churn_batch", "model", "prompt")
    for name in (*cleared, "request_timeout", "poll_interval", "task_timeout", "max_tokens"):
        setattr(options, name, "")
    settings = settings_of(options)
    assert settings.agent.capacity.memory_budget_bytes == GIB
    assert settings.agent.churn == DEFAULTS.churn
    assert settings.agent.model == DEFAULTS.model and settings.agent.prompt is None
    assert settings.agent.request_timeout == DEFAULTS.request_timeout and settings.agent.max_tokens == 64


@pytest.mark.parametrize(
    "name, value, flag",
    [
        ("memory_budget", "banana", "--memory-budget"),
        ("memory_budget", "0", "--memory-budget"),
        ("churn_cycles", "-3", "--churn-cycles"),
        ("request_timeout", float("inf"), "--request-timeout"),
        ("task_timeout", float("nan"), "--task-timeout"),
        ("max_tokens", 0, "--max-tokens"),
        ("langgraph_input", "[1, 2]", "--langgraph-input"),
        ("langgraph_input", "{oops", "--langgraph-input"),
    ],
)
def test_a_bad_web_form_value_is_one_input_error_naming_the_option(parse, name, value, flag):
    options = parse("--load-profile", "capacity")
    setattr(options, name, value)
    with pytest.raises(InputError) as err:
        settings_of(options)
    assert str(err.value).startswith(flag) and "\n" not in str(err.value)


def test_refresh_keeps_the_run_and_rereads_the_form(parse):
    options = parse("--run-id", "keep-me")
    settings = read_settings(options, "keep-me")
    options.load_profile, options.memory_budget, options.prompt = "capacity", "2GiB", "hello"
    again = refresh(settings, options)
    assert again.run_id == "keep-me" and again.run_dir == settings.run_dir
    assert again.profile_name == "capacity" and again.agent.prompt == "hello"
    assert again.agent.capacity.memory_budget_bytes == 2 * GIB


def test_locust_environment_variables_set_the_kit_options(parse, monkeypatch):
    monkeypatch.setenv("LOCUST_MEMORY_BUDGET", "5MiB")
    monkeypatch.setenv("LOCUST_REQUEST_TIMEOUT", "7.5")
    monkeypatch.setenv("LOCUST_LOAD_PROFILE", "average")
    settings = settings_of(parse())
    assert settings.agent.capacity.memory_budget_bytes == 5 * 1024**2
    assert settings.agent.request_timeout == 7.5 and settings.profile_name == "average"


def test_the_command_line_beats_a_locust_variable(parse, monkeypatch):
    monkeypatch.setenv("LOCUST_REQUEST_TIMEOUT", "7.5")
    assert settings_of(parse("--request-timeout", "3")).agent.request_timeout == 3.0


def test_a_config_file_sets_the_kit_options(parse, tmp_path):
    conf = tmp_path / "locust.conf"
    conf.write_text("memory-budget = 64MiB\nmodel = from-conf\nno-cleanup = true\n", encoding="utf-8")
    settings = settings_of(parse(config=str(conf)))
    assert settings.agent.capacity.memory_budget_bytes == 64 * 1024**2
    assert settings.agent.model == "from-conf" and settings.agent.cleanup is False


def test_preset_defaults_fill_only_unset_options(parse):
    hermes = settings_of(parse("--gateway", "hermes"))
    assert hermes.agent.model == "hermes-agent" and hermes.agent.api_key_env == "API_SERVER_KEY"
    assert hermes.agent.session_header == "X-Hermes-Session-Id" and hermes.target.health_path == "/health"
    given = settings_of(parse("--gateway", "hermes", "--model", "mine", "--health-path", "/up"))
    assert given.agent.model == "mine" and given.target.health_path == "/up"


def test_a_replay_through_hermes_sends_no_session_header_unless_one_is_given(parse):
    """X-Hermes-Session-Id makes Hermes answer from the history it stored (its own tool calls among it),
    not the replayed body's: replayed through it, turn 3 of a recording read +2.7 % tokens in."""
    sessions = str(REPO / "examples" / "sessions" / "research-agent.jsonl")
    replay = settings_of(parse("--gateway", "hermes", "--sessions", sessions))
    assert replay.agent.session_header == "user"
    given = settings_of(parse("--gateway", "hermes", "--sessions", sessions, "--session-header", "X-S"))
    assert given.agent.session_header == "X-S"
    openclaw = settings_of(parse("--gateway", "openclaw", "--sessions", sessions))
    assert openclaw.agent.session_header == "x-openclaw-session-key"  # not known to replace the body's


def test_sessions_are_chosen_from_the_command_line_and_refused_without_a_file(parse):
    sessions = str(REPO / "examples" / "sessions" / "research-agent.jsonl")
    chosen = settings_of(parse("--sessions", sessions, "--sessions-select", "conversation-b259e495b3f5"))
    assert [s.name for s in chosen.agent.sessions.sessions] == ["conversation-b259e495b3f5"]
    assert chosen.agent.sessions.describe()["left_out"] == 1
    with pytest.raises(InputError, match="no such session"):
        settings_of(parse("--sessions", sessions, "--sessions-select", "nope"))
    with pytest.raises(InputError, match="add --sessions FILE"):
        settings_of(parse("--sessions-skip", "broken"))
    assert (
        settings_of(parse("--sessions", sessions, "--sessions-stream", "always")).agent.sessions_stream
        == "always"
    )


def test_every_user_facing_error_is_a_kit_error_with_its_exit_code():
    for cls in (
        ProfileConfigError,
        ThresholdConfigError,
        PriceTableError,
        presets.GatewayError,
        UsageError,
        TargetError,
    ):
        assert issubclass(cls, InputError) and cls.exit_code == exit_codes.BAD_INPUT
    assert issubclass(TargetDiedError, KitError) and TargetDiedError.exit_code == exit_codes.TARGET_DIED


def test_an_unknown_gateway_is_an_input_error(parse):
    with pytest.raises(InputError, match="unknown gateway 'nope'"):
        settings_of(parse("--gateway", "nope"))


def test_presets_say_their_behaviour_by_flags():
    assert presets.PRESETS["simulator"].embedded_simulator and presets.PRESETS["acp"].stdio_agents
    assert presets.PRESETS["mcp"].embedded_simulator  # the simulator's MCP endpoint, without --host
    others = [p for n, p in presets.PRESETS.items() if n not in ("simulator", "acp", "mcp")]
    assert not any(p.embedded_simulator or p.stdio_agents for p in others)


def test_stdio_agents_need_their_command_and_no_url(parse):
    with pytest.raises(InputError, match="--acp-command"):
        resolve_target(settings_of(parse("--gateway", "acp")))
    target = resolve_target(settings_of(parse("--gateway", "acp", "--acp-command", "agent --stdio")))
    assert target.url == "" and target.pid is None


def test_mcp_over_stdio_needs_no_url_samples_its_servers_and_takes_capacity(parse):
    command = "python -m simgateway.mcp_stdio --mcp-tool-ms 5"
    settings = settings_of(parse("--gateway", "mcp", "--mcp-command", command))
    target = resolve_target(settings)  # no simulator started: the agents start their servers
    assert target.url == "" and target.pid is None
    options = sampler_options(settings, target)
    assert options is not None and options.matches == [re.escape("-m simgateway.mcp_stdio --mcp-tool-ms 5")]
    assert options.transient_target  # the servers start and end with the agents' sessions
    for profile in ("capacity", "churn"):  # the servers the sessions start are the target: none to name
        settings_of(parse("--gateway", "mcp", "--mcp-command", command, "--load-profile", profile))
    with pytest.raises(InputError, match="--mcp-command 'server \"x': No closing quotation"):
        settings_of(parse("--gateway", "mcp", "--mcp-command", 'server "x'))


def test_a_gateway_without_a_simulator_needs_a_host_or_a_command(parse):
    with pytest.raises(InputError, match="--gateway litellm needs --host URL or --target-cmd"):
        resolve_target(settings_of(parse("--gateway", "litellm")))


@pytest.mark.parametrize(
    "argv, pacing",
    [
        (["--load-profile", "smoke"], Pacing),
        (["--load-profile", "manual", "-u", "2"], Pacing),
        (["--load-profile", "capacity"], Pacing),
        (["--load-profile", "average", "--arrival-rate", "2"], OpenModelPacing),
        (["--load-profile", "rounds", "--rounds", "2,3"], RoundsPacing),
    ],
)
def test_every_profile_says_what_paces_it_through_one_protocol(parse, argv, pacing):
    settings = settings_of(parse(*argv))
    profile = registry.build_profile(settings.profile_name, settings.profile)
    found = pacing_for(profile.paced_by(1000.0))
    assert type(found) is pacing  # the closed model: the base Pacing itself


def test_agents_read_the_settings_the_run_set():
    class Probe(KitAgent):
        pass

    environment = Environment(user_classes=[Probe])
    assert Probe(environment).settings == DEFAULTS  # a bare environment: the defaults
    new_context(environment, AgentSettings(run_id="r-9", model="m"))
    agent = Probe(environment)
    assert agent.run_id == "r-9" and agent.settings.model == "m"
    assert context_of(Environment()).settings == DEFAULTS


@pytest.mark.parametrize("given, path", [("health", "/health"), ("//ok", "/ok"), ("", ""), (" /up ", "/up")])
def test_the_health_path_is_normalised(parse, given, path):
    assert settings_of(parse("--health-path", given)).target.health_path == path


def test_no_host_check_skips_reaching_the_host(parse):
    closed = "http://127.0.0.1:9"
    assert resolve_target(settings_of(parse("--host", closed, "--no-host-check"))).url == closed
    with pytest.raises(InputError, match="nothing answers"):
        resolve_target(settings_of(parse("--host", closed)))


def test_a_non_empty_run_dir_is_used_only_when_asked(tmp_path):
    (tmp_path / "old.csv").write_text("a\n1\n")
    with pytest.raises(InputError, match="not empty"):
        input_checks.run_dir(tmp_path, reuse=False)
    assert input_checks.run_dir(tmp_path, reuse=True) == tmp_path
    assert input_checks.run_dir(tmp_path / "new", reuse=False) == tmp_path / "new"


def test_a_run_directory_the_kit_names_stays_under_the_runs_root(tmp_path):
    """runs/X as a symbolic link to another place is refused (the kit would write the run there); a
    runs root that is itself a link, and a run directory not there yet, are fine."""
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    root = tmp_path / "runs"
    root.symlink_to(tmp_path / "data" / "runs")
    (root / "X").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(
        InputError, match=r"runs/X: leads to .*elsewhere, outside .*runs/ \(a symbolic link\)"
    ):
        input_checks.under_root(root / "X", root)
    assert input_checks.under_root(root / "new", root) == root / "new"


@pytest.mark.parametrize(
    "argv, ignored",
    [
        (["--load-profile", "average", "-u", "5", "-t", "10s"], ["-u", "-t"]),
        (
            ["--load-profile", "manual", "-u", "5", "--peak-users", "3", "--rounds", "2"],
            ["--peak-users", "--rounds"],
        ),
        (["--load-profile", "smoke", "--peak-users", "3", "--duration", "5s"], []),
        (["--load-profile", "average", "--arrival-rate", "2", "--max-agents", "4"], []),
        (["--load-profile", "average", "--max-agents", "4"], ["--max-agents"]),
    ],
)
def test_options_the_profile_ignores_are_named(parse, argv, ignored):
    settings = settings_of(parse(*argv))
    assert registry.ignored_options(settings.profile_name, settings.profile) == ignored


DURATION_OPTIONS = {  # option -> where its seconds land in the settings
    "--start-timeout": lambda s: s.target.start_timeout,
    "--liveness-timeout": lambda s: s.target.liveness_timeout,
    "--sample-interval": lambda s: s.target.sample_interval,
    "--trend-min-duration": lambda s: s.target.trend_min_duration,
    "--request-timeout": lambda s: s.agent.request_timeout,
    "--poll-interval": lambda s: s.agent.poll_interval,
    "--task-timeout": lambda s: s.agent.task_timeout,
    "--duration": lambda s: s.profile.duration_s,
}


@pytest.mark.parametrize("flag", sorted(DURATION_OPTIONS))
@pytest.mark.parametrize(("text", "seconds"), [("15m", 900.0), ("1h", 3600.0), ("90", 90.0), ("1m30s", 90.0)])
def test_every_duration_option_takes_the_same_units(parse, flag, text, seconds):
    """docs/gateways.md's `--task-timeout 15m` exited 2: the timeouts took plain seconds only."""
    assert DURATION_OPTIONS[flag](settings_of(parse(flag, text))) == seconds


@pytest.mark.parametrize("flag", sorted(DURATION_OPTIONS))
def test_a_bad_duration_is_refused_with_the_accepted_forms(parse, flag):
    with pytest.raises((SystemExit, InputError, ProfileConfigError)) as refused:
        settings_of(parse(flag, "15 minutes"))
    if not isinstance(refused.value, SystemExit):  # argparse's own exit 2 printed the line itself
        assert "30s, 2m, 1h" in str(refused.value) and flag in str(refused.value)


def test_response_caps_take_sizes_and_refuse_what_is_not_one(parse):
    agent = settings_of(parse("--max-response-bytes", "8MiB", "--max-sse-line-bytes", "4096")).agent
    assert (agent.max_response_bytes, agent.max_sse_line_bytes) == (8 * 1024 * 1024, 4096)
    assert DEFAULTS.max_response_bytes == 64 * 1024 * 1024 and DEFAULTS.max_sse_line_bytes == 1024 * 1024
    for bad in ("lots", "0"):
        with pytest.raises(InputError, match="--max-response-bytes"):
            settings_of(parse("--max-response-bytes", bad))


def test_the_masters_port_for_its_workers_binds_loopback_unless_the_user_names_an_address(parse, tmp_path):
    """Locust's master binds every interface by default; the kit binds 127.0.0.1, as its web UI, and
    --master-bind-host (its command line or locust.conf) still names another."""
    assert parse().master_bind_host == "127.0.0.1"
    assert parse("--master-bind-host", "0.0.0.0").master_bind_host == "0.0.0.0"
    conf = tmp_path / "locust.conf"
    conf.write_text("master-bind-host = 10.0.0.5\n")
    assert parse(config=str(conf)).master_bind_host == "10.0.0.5"


def test_the_program_an_agent_runs_is_looked_for_by_its_own_option_before_any_load(parse):
    """Hermes Kanban runs `hermes kanban ...` per task: a missing program is one line naming its option."""
    settings = read_settings(
        parse("--gateway", "hermes-kanban", "--hermes-command", "no-such-hermes"), "run-1"
    )
    environment = Environment(parsed_options=parse())
    with pytest.raises(InputError, match="'no-such-hermes', not found on PATH: .* with --hermes-command$"):
        choose_agents(environment, settings)
