"""Distributed Locust (--master / --worker / --processes) with the kit: the saturation check judges every
load-generator process from the workers' own CPU reports; serial drivers are refused in one line."""

from __future__ import annotations

import json

from contract.exit_codes import BAD_INPUT
from kit.judge import SATURATED_CPU_PCT, saturation_p90s
from tests.locust_runs import chat_smoke, run_locust


def test_saturation_is_judged_on_the_worst_process_with_enough_readings():
    judged = saturation_p90s([10.0] * 5, {"a": [95.0, 96.0, 97.0], "b": [99.0, 99.0]})
    assert set(judged) == {"master", "worker a"}  # b: two reports are too few to judge
    assert judged["worker a"] >= SATURATED_CPU_PCT > judged["master"]
    assert set(saturation_p90s([50.0] * 4, {})) == set()  # four readings of one process: not judged


def test_capacity_is_refused_on_a_master_in_one_line(tmp_path):
    done = run_locust(
        tmp_path / "run", "--master", "--expect-workers", "1", "--load-profile", "capacity", timeout=60
    )
    assert done.returncode == BAD_INPUT
    errors = [line for line in done.stderr.splitlines() if line.startswith("loadkit: error:")]
    assert len(errors) == 1 and "serial driver" in errors[0] and "Traceback" not in done.stderr


def test_every_worker_reports_its_cpu_to_the_masters_saturation_check(tmp_path):
    run_dir = tmp_path / "run"
    done = chat_smoke(run_dir, "12s", "--ttft-ms 20", "--processes", "2")
    meta = json.loads((run_dir / "run.json").read_text())
    validity = meta["validity"]
    workers = [name for name in validity.get("processes", {}) if name.startswith("worker ")]
    assert len(workers) == 2, (validity, done.stderr[-1500:])
    worst = max(validity["processes"].values())
    assert validity["loadgen_cpu_p90"] == worst and validity["valid"] is (worst < SATURATED_CPU_PCT)
