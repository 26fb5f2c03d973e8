"""LiteLLM proxy (mock responses, no provider, no network) on loopback: the chat agent authenticates
from an environment variable, reads usage streamed and not, and the kit's computed cost agrees with the
cost LiteLLM itself reports (x-litellm-response-cost header, or usage.cost on a stream) within 1 %; for an
alias with no list price the summary prints the gateway's own total.

Truth: gpt-4o-mini's list price in LiteLLM's bundled cost map ($0.15/M in, $0.60/M out), which the mock
deployment `mock-gpt` is billed at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from agents.gateways.openai_chat import ChatAgent
from agents.presets import preset
from analysis.cost import gateway_comparison, price_rows
from analysis.load import load_run
from analysis.prices import load_prices, parse_prices
from analysis.summary import console_summary
from contract import schema
from scenarios.workloads.distributions import Distribution, fixed
from scenarios.workloads.settings import WorkloadSettings
from tests.gateways.harness import LITELLM_TESTS, agent_user, free_port, rows, running_server
from tests.paths import TEST_GATEWAYS

pytestmark = LITELLM_TESTS
CONFIG = TEST_GATEWAYS / "litellm_config.yaml"
KEY_ENV = "LOADKIT_TEST_LITELLM_KEY"
MASTER_KEY = "sk-loadkit-test-key"  # the test config's master_key
PRICES = """
[models."mock-gpt"]
input = 0.15
cached_input = 0.075
cache_write = 0.15
output = 0.60
currency = "USD"
as_of = "2026-11"
source = "LiteLLM's bundled cost map for gpt-4o-mini"
fictional = true
"""


@pytest.fixture(scope="module")
def litellm_url():
    os.environ[KEY_ENV] = MASTER_KEY
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # never fetch the cost map from the internet
    port = free_port()
    litellm = shutil.which("litellm") or "litellm"
    command = [litellm, "--config", str(CONFIG), "--host", "127.0.0.1", "--port", str(port)]
    with running_server(command, preset("litellm").health_path, port, timeout_s=90) as url:
        yield url


def chat_rows(url: str, run_dir: Path, **options) -> list[dict]:
    options = {"model": "mock-gpt", "api_key_env": KEY_ENV, "session_header": "user", **options}
    with agent_user(ChatAgent, url, run_dir, **options) as user:
        for _ in range(3):
            user.chat_stream()
    return rows(run_dir, schema.REQUESTS_CSV)


@pytest.mark.parametrize("stream", [True, False])
def test_computed_cost_matches_litellms_reported_cost_within_1_percent(litellm_url, tmp_path, stream):
    requests = chat_rows(litellm_url, tmp_path, chat_stream=stream)
    assert len(requests) == 3 and all(r["ok"] == "1" for r in requests), requests
    frame = pd.read_csv(tmp_path / schema.REQUESTS_CSV)
    assert frame["gateway_cost_usd"].gt(0).all() and frame["tokens_out"].gt(0).all(), frame
    priced, warnings = price_rows(frame, parse_prices(PRICES))
    comparison = gateway_comparison(priced)
    assert list(comparison.index) == ["mock-gpt"] and comparison.loc["mock-gpt", "calls"] == 3, warnings
    assert abs(comparison.loc["mock-gpt", "diff_pct"]) < 1.0, comparison


def test_alias_without_a_list_price_summary_prints_the_gateways_total(litellm_url, tmp_path):
    requests = chat_rows(litellm_url, tmp_path)
    assert all(r["ok"] == "1" and r["model"] for r in requests), requests
    assert load_prices().lookup(requests[0]["model"]) is None  # the alias is not in the kit's price table
    reported = pd.read_csv(tmp_path / schema.REQUESTS_CSV)["gateway_cost_usd"].sum()
    (line,) = [x for x in console_summary(load_run(tmp_path)).splitlines() if x.startswith("LLM cost")]
    assert line.startswith(f"LLM cost: ${reported:,.6f} over 3 calls") and "gateway reported" in line, line


def test_missing_key_gives_failed_rows_not_a_crash(litellm_url, tmp_path):
    # LiteLLM 1.106.12 without a database answers an unauthenticated call with 500, not 401
    requests = chat_rows(litellm_url, tmp_path, api_key_env="LOADKIT_TEST_UNSET_KEY")
    assert [r["ok"] for r in requests] == ["0"] * 3, requests
    assert all(int(r["status_code"]) >= 400 and not r["gateway_cost_usd"] for r in requests), requests


def test_asked_input_sizes_are_what_litellm_counts_with_tiktoken_within_5_percent(litellm_url, tmp_path):
    """LiteLLM counts the prompt with tiktoken (its mock deployment reports that count): 60 calls of a
    lognormal workload; after the first few responses calibrate the kit's characters per token, every
    call's reported input is within 5 % of its asked size, and the mean too."""
    workload = WorkloadSettings(input=Distribution("lognormal", 2000, 600), output=fixed(16), seed=3)
    options = {"model": "mock-gpt", "api_key_env": KEY_ENV, "session_header": "user"}
    with agent_user(ChatAgent, litellm_url, tmp_path, workload=workload, **options) as user:
        for _ in range(60):
            user.chat_stream()
        calibration = user.workload.calibration
    frame = pd.read_csv(tmp_path / schema.REQUESTS_CSV)
    assert (frame["ok"] == 1).all() and len(frame) == 60, frame["error"].dropna().tolist()[:3]
    later = frame.iloc[5:]
    ratio = later["tokens_in"] / later["asked_tokens_in"]
    assert ratio.between(0.95, 1.05).all(), ratio.describe()
    assert later["tokens_in"].mean() == pytest.approx(later["asked_tokens_in"].mean(), rel=0.05)
    assert calibration.samples == 60 and 3.5 < calibration.chars_per_token < 4.5


def test_short_and_long_prompts_through_litellm_read_back_within_5_percent_each(litellm_url, tmp_path):
    """Sizes from 64 to 2,000 tokens in one run: LiteLLM's count adds its tokens per message and the
    agent's tag to every prompt, which one characters-per-token ratio cannot absorb (the short prompts came
    out 16-27 % too large); the fitted overhead and ratio bring each call within 5 %."""
    workload = WorkloadSettings(
        input=Distribution("lognormal", 400, 500, low=64, high=2000), output=fixed(16), seed=5
    )
    options = {"model": "mock-gpt", "api_key_env": KEY_ENV, "session_header": "user"}
    with agent_user(ChatAgent, litellm_url, tmp_path, workload=workload, **options) as user:
        for _ in range(60):
            user.chat_stream()
        fit = user.workload.calibration.fit
    frame = pd.read_csv(tmp_path / schema.REQUESTS_CSV)
    assert (frame["ok"] == 1).all() and len(frame) == 60, frame["error"].dropna().tolist()[:3]
    later = frame.iloc[5:]
    error = (later["tokens_in"] - later["asked_tokens_in"]).abs() / later["asked_tokens_in"]
    short, long = later["asked_tokens_in"] <= 128, later["asked_tokens_in"] >= 1000
    assert short.sum() >= 5 and long.sum() >= 2 and error.max() <= 0.05, (
        fit,
        later.loc[error > 0.05, ["asked_tokens_in", "tokens_in"]],
    )
    assert fit.overhead > 0, fit
