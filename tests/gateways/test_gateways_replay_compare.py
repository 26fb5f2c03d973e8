"""One recording, two gateways, one table, with a real gateway: the `openai`-package agent recorded once,
replayed by the same copies against the simulator directly and against a LiteLLM proxy in front of an
identical simulator, then `python -m analysis compare`: both read the recorded steps and tokens, each
model sees exactly the kit's calls (LiteLLM adds none: no retry, no background call), and the proxy's
own time shows as a higher latency."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agents.presets import preset
from analysis.compare import RECORDING, compare_table
from analysis.load import load_run
from contract.exit_codes import OK
from simgateway import launch
from tests.capture.test_capture_recorder import SIM, TOOL_STEPS
from tests.capture.test_capture_replay import copies, recorded_session
from tests.gateways.harness import LITELLM_TESTS, free_port, running_server
from tests.locust_runs import run_locust

pytestmark = LITELLM_TESTS
KEY = "sk-loadkit-replay-compare"
COPIES = 4
CONFIG = """model_list:
  - model_name: sim-model
    litellm_params:
      model: openai/sim-model
      api_base: {url}/v1
      api_key: sk-sim-upstream
litellm_settings:
  telemetry: false
general_settings:
  master_key: {key}
"""


def replay_on(run_dir: Path, recorded: Path, host: str, sim_url: str, *gateway: str) -> Path:
    args = ("--host", host, "--model-calls-url", sim_url, "--sessions", str(recorded), "--model", "sim-model")
    done = run_locust(run_dir, *gateway, *args, *copies(COPIES), "--identical-copies", timeout=180)
    assert done.returncode == OK, done.stderr[-3000:]
    return run_dir


def test_one_recording_on_the_simulator_and_on_litellm_compares_in_one_table(tmp_path):
    recorded = recorded_session(tmp_path)
    with launch.running(SIM) as direct:
        runs = [replay_on(tmp_path / "direct", recorded, direct.url, direct.url)]
    os.environ |= {"LITELLM_MASTER_KEY": KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with launch.running(SIM) as behind:
        config = tmp_path / "litellm.yaml"
        config.write_text(CONFIG.format(url=behind.url, key=KEY))
        port = free_port()
        command = [shutil.which("litellm") or "litellm", "--config", str(config), "--host", "127.0.0.1"]
        with running_server([*command, "--port", str(port)], preset("litellm").health_path, port, 90) as url:
            runs.append(replay_on(tmp_path / "litellm", recorded, url, behind.url, "--gateway", "litellm"))
    table = compare_table([load_run(d) for d in runs])
    direct_col, litellm_col = table.columns[:2]
    for column in (direct_col, litellm_col):
        assert table.loc["copies done", column] == COPIES
        calls = COPIES * (TOOL_STEPS + 1)
        assert table.loc["model calls", column] == table.loc["model calls at the model", column] == calls
        assert table.loc["tokens in per copy p50", column] == table.loc["tokens in per copy p50", RECORDING]
    latency = table.loc["model call latency p50 (ms)"]
    assert latency[litellm_col] > latency[direct_col], latency  # the proxy's own time, on every call
