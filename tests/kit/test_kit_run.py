"""End to end: `locust -f locustfile.py --headless` against the embedded simulator, in a subprocess,
exactly as a user runs it; the run directory is the thing checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pandas as pd
import pytest

from contract import exit_codes, schema
from kit import rundir
from tests.locust_runs import REPO, chat_smoke, csv_rows, locust_command, run_locust, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    done = run_locust(run_dir, "--load-profile", "smoke", "--duration", "8s", "--sample-interval", "0.5")
    return run_dir, done


def test_smoke_run_writes_a_complete_run_directory(smoke_run):
    run_dir, done = smoke_run
    assert done.returncode == 0, done.stderr[-2000:]
    for name in (
        schema.RUN_JSON,
        schema.SAMPLES_CSV,
        schema.REQUESTS_CSV,
        schema.TASKS_CSV,
        schema.AGENTS_CSV,
        "locust_stats.csv",
        schema.LOCUST_HTML,
        schema.REPORT_MD,
        schema.REPORT_HTML,
    ):
        assert (run_dir / name).stat().st_size > 0, name
    for name in (schema.SAMPLES_CSV, schema.REQUESTS_CSV, schema.TASKS_CSV):
        assert csv_rows(run_dir / name) > 0, name
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert meta["stop_reason"] == "profile complete" and meta["exit_code"] == 0
    assert meta["profile"]["name"] == "smoke" and meta["profile"]["phases"]
    assert meta["kit_version"] == rundir.KIT_VERSION  # pyproject.toml's version
    assert meta["target"]["started_by_kit"] and meta["target"]["exit_code"] == 0


def test_smoke_summary_agrees_with_the_files(smoke_run):
    run_dir, done = smoke_run
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    samples = pd.read_csv(run_dir / schema.SAMPLES_CSV)
    tasks = pd.read_csv(run_dir / schema.TASKS_CSV)
    peak_mib = samples["target_rss_bytes"].max() / schema.MIB
    assert f"peak target RSS: {peak_mib:.1f} MiB" in done.stdout
    chats = requests[(requests.operation == "chat.stream") & (requests.ok == 1)]["latency_ms"]
    assert (
        f"chat.stream: p50 {chats.quantile(0.5):,.0f} ms" in done.stdout
        and f"(n={len(chats)})" in done.stdout
    )
    ttft = requests["ttft_ms"].dropna()
    assert f"TTFT: p50 {ttft.quantile(0.5):.0f} ms" in done.stdout and f"(n={len(ttft)})" in done.stdout
    assert f"tasks: {(tasks['status'] == 'done').sum()} done" in done.stdout
    assert str(run_dir) in done.stdout


@pytest.mark.timing
def test_eight_tasks_with_max_in_progress_six_run_six_and_queue_two(tmp_path):
    run_dir = tmp_path / "run"
    done = run_locust(
        run_dir,
        "TaskAgent",
        "--load-profile",
        "manual",
        "-u",
        "8",
        "-r",
        "100",
        "-t",
        "6s",
        "--sim-args",
        "--max-in-progress 6 --task-seconds 3 --dispatch-interval 0.2",
        "--sample-interval",
        "0.2",
        "--poll-interval",
        "0.2",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    samples = pd.read_csv(run_dir / schema.SAMPLES_CSV)
    assert samples["in_progress"].max() == 6
    assert samples["queue_length"].max() <= 8  # all 8 may sit queued until the first dispatcher tick
    assert ((samples["in_progress"] == 6) & (samples["queue_length"] == 2)).any()
    first_eight = pd.read_csv(run_dir / schema.TASKS_CSV).sort_values("submitted_ts").head(8)
    waits_s = first_eight["queue_wait_ms"] / 1000
    assert (waits_s < 1.0).sum() == 6, waits_s.tolist()
    assert (waits_s > 2.5).sum() == 2, waits_s.tolist()


def test_killing_the_gateway_mid_run_ends_with_a_reason_and_keeps_every_sample(tmp_path):
    run_dir = tmp_path / "run"
    cmd = locust_command(run_dir, "--load-profile", "smoke", "--duration", "60s", "--sample-interval", "0.2")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: csv_rows(run_dir / schema.SAMPLES_CSV) >= 5, 30, "five samples")
        target_pid = json.loads((run_dir / schema.RUN_JSON).read_text())["target"]["pid"]
        rows_before = csv_rows(run_dir / schema.SAMPLES_CSV)
        os.killpg(target_pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_codes.TARGET_DIED, err[-2000:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert "target died" in meta["stop_reason"] and meta["exit_code"] == exit_codes.TARGET_DIED
    samples = pd.read_csv(run_dir / schema.SAMPLES_CSV)
    assert len(samples) >= rows_before and samples["ts"].notna().all()
    assert "run directory:" in out and "target died" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--load-profile", "nope"], "invalid choice: 'nope'"),
        (["--sample-interval", "-1"], "'-1' is not a duration"),
        (["--sim-args", "--ttft-ms banana"], "target exited with code 2 during start-up"),
        (["--host", "http://127.0.0.1:9", "--target-cmd", "false"], "target exited with code 1"),
        (["--duration", "3 parsecs"], "--duration"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2_before_any_load(tmp_path, args, message):
    done = run_locust(tmp_path / "run", *args, timeout=60)
    assert done.returncode == exit_codes.BAD_INPUT
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], done.stderr[-1500:]
    assert csv_rows(tmp_path / "run" / schema.REQUESTS_CSV) == 0


def test_the_api_key_never_reaches_a_file_a_log_or_a_report(tmp_path):
    run_dir = tmp_path / "run"
    secret = "sk-loadkit-test-0123456789abcdef"
    env = {**os.environ, "LOADKIT_TEST_KEY": secret}
    done = subprocess.run(
        locust_command(
            run_dir,
            "ChatAgent",
            "--load-profile",
            "smoke",
            "--duration",
            "3s",
            "--api-key-env",
            "LOADKIT_TEST_KEY",
            "--sim-args",
            "--ttft-ms 20",
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert csv_rows(run_dir / schema.REQUESTS_CSV) > 0
    leaks = [p.name for p in run_dir.iterdir() if secret.encode() in p.read_bytes()]
    assert leaks == [] and secret not in done.stdout + done.stderr
    assert "LOADKIT_TEST_KEY" in (run_dir / schema.RUN_JSON).read_text()  # the variable's name only


@pytest.mark.parametrize(
    "sim, timeout, kinds",
    [
        (
            "--ttft-ms 50 --error-rate 0.3 --garbage-rate 0.3 --max-concurrent-chats 2",
            "30",
            {"http_5xx", "protocol", "backpressure"},
        ),
        ("--ttft-ms 400", "0.2", {"timeout"}),
    ],
)
def test_a_misbehaving_gateway_gives_classified_failed_rows_and_still_a_report(tmp_path, sim, timeout, kinds):
    run_dir = tmp_path / "run"
    done = chat_smoke(run_dir, "5s", sim, "--request-timeout", timeout)
    assert done.returncode == exit_codes.REQUEST_ERRORS, done.stderr[-1500:]
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    failed = requests[requests.ok == 0]
    assert kinds <= set(failed.error_kind), failed.error_kind.value_counts()
    assert failed.error.notna().all() and (failed.error.str.len() <= 200).all()  # one line each
    assert failed.tokens_in.isna().all()  # no usage invented for a failed call
    assert (run_dir / schema.REPORT_HTML).exists() and "run directory:" in done.stdout


def test_the_kit_runs_from_any_working_directory(tmp_path):
    """`locust -f /path/to/locustfile.py` from elsewhere: the embedded simulator and the sampler are the
    kit's own modules and must start without the repo being the working directory."""
    run_dir = tmp_path / "run"
    done = subprocess.run(
        locust_command(run_dir, "ChatAgent", "--load-profile", "smoke", "--duration", "3s"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert csv_rows(run_dir / schema.REQUESTS_CSV) > 0 and csv_rows(run_dir / schema.SAMPLES_CSV) > 0
