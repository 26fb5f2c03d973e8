"""Per-worker memory per worker tree: a worker's children are summed into it, a helper read fewer than
MIN_READINGS times is listed apart, and the gateway's own growth is never a worker's.

Truth: a synthetic process_readings.csv with known trees, one reading a second. The gateway (pid 100,
with a standing child pid 101) grows by 10 MiB a round; each round's workers hold 150 MiB with a 20 MiB
child (170 MiB a tree), one worker detached (parent init) holds 170 alone, and one helper lives two readings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.load import load_run
from analysis.rounds import rounds_table, worker_notes
from analysis.worker_trees import MIN_READINGS, worker_trees
from contract import schema
from contract.schema import MIB
from tests.synthetic import T0, rounds_run

GATEWAY, STANDING = 100, 101
HELPER_MIB = 12.0


def reading_rows(pid: int, ppid: int, mib: float, start: float, end: float) -> pd.DataFrame:
    """One process read once a second over [start, end)."""
    ts = np.arange(start, end, 1.0)
    return pd.DataFrame({"ts": ts, "pid": pid, "ppid": ppid, "rss_bytes": mib * MIB})


def gateway_rows(end: float) -> list[pd.DataFrame]:
    """The gateway and its standing child from the first reading, growing 10 MiB every 120 s."""
    ts = np.arange(T0, end, 1.0)
    growth = 10 * np.floor(np.maximum(ts - T0 - 30, 0) / 120 + 1) * (ts >= T0 + 30)
    gateway = pd.DataFrame({"ts": ts, "pid": GATEWAY, "ppid": 1, "rss_bytes": (400 + growth) * MIB})
    return [gateway, reading_rows(STANDING, GATEWAY, 30, T0, end)]


def round_rows(round_no: int, workers: int, start: float) -> list[pd.DataFrame]:
    """A round's workers (the last one detached, its own root), each 170 MiB a tree, and a helper."""
    rows = []
    for k in range(workers):
        pid = 1000 * round_no + 10 * k
        if k == workers - 1:
            rows.append(reading_rows(pid, 1, 170, start + 2, start + 80))
            continue
        rows.append(reading_rows(pid, GATEWAY, 150, start + 1, start + 90))
        rows.append(reading_rows(pid + 1, pid, 20, start + 5, start + 60))  # the worker's child
    helper = 1000 * round_no + 999
    rows.append(reading_rows(helper, GATEWAY, HELPER_MIB, start + 3, start + 3 + MIN_READINGS - 1))
    return rows


def synthetic_run(tmp_path, rounds_read: int = 3):
    """The rounds study's synthetic run (rounds of 6, 8, 10 tasks from T0 + 30, 120 s each) with the
    process readings of the trees above (of the first `rounds_read` rounds: the others ran no process)."""
    run = rounds_run(tmp_path)
    frames = gateway_rows(T0 + 30 + 3 * 120)
    for round_no, workers in enumerate((6, 8, 10)[:rounds_read], start=1):
        frames += round_rows(round_no, workers, T0 + 30 + 120 * (round_no - 1))
    readings = pd.concat(frames).sort_values("ts", kind="stable")
    readings[list(schema.PROCESS_READING_COLUMNS)].to_csv(run / schema.PROCESS_READINGS_CSV, index=False)
    first = readings.drop_duplicates("pid")
    listed = first.assign(role="target", command="python -m worker", why="in the tree of pid 100")
    listed.loc[listed["pid"] % 1000 == 999, "command"] = "git status --short"
    listed[list(schema.PROCESS_COLUMNS)].to_csv(run / schema.PROCESSES_CSV, index=False)
    return run


def test_each_worker_tree_is_its_own_peak_with_its_children_and_the_helper_apart(tmp_path):
    run = load_run(synthetic_run(tmp_path))
    trees = worker_trees(run.process_readings, T0 + 30)
    counted = [t for t in trees if t.counted]
    assert len(counted) == 6 + 8 + 10
    assert {t.peak_rss_bytes / MIB for t in counted} == {170.0}
    detached = {1050, 2070, 3090}  # each round's last worker: no child
    assert {t.pid: t.procs for t in counted if t.pid in detached} == dict.fromkeys(detached, 1)
    assert {t.procs for t in counted if t.pid not in detached} == {2}
    transient = [t for t in trees if not t.counted]
    assert [(t.pid, t.readings, t.peak_rss_bytes / MIB) for t in transient] == [
        (1999, MIN_READINGS - 1, HELPER_MIB),
        (2999, MIN_READINGS - 1, HELPER_MIB),
        (3999, MIN_READINGS - 1, HELPER_MIB),
    ]
    assert GATEWAY not in {t.pid for t in trees} and STANDING not in {t.pid for t in trees}


def test_rounds_table_reads_the_tree_figure_with_its_n_and_lists_the_transient_apart(tmp_path):
    run = load_run(synthetic_run(tmp_path))
    table = rounds_table(run)
    assert table["worker_mib_mean"].tolist() == pytest.approx([170.0] * 3)
    assert table["worker_mib_min"].tolist() == pytest.approx([170.0] * 3)
    assert table["workers_counted"].tolist() == [6, 8, 10]
    assert table["workers_transient"].tolist() == [1, 1, 1]
    assert set(table["worker_mib_from"]) == {"6 worker trees, each its peak"} | {
        f"{n} worker trees, each its peak" for n in (8, 10)
    }
    rule, transient = worker_notes(run)
    assert f"at least {MIN_READINGS} times" in rule
    assert transient.startswith(f"transient, not counted: 3 process tree(s) read fewer than {MIN_READINGS}")
    assert "pid 1999 'git status --short' (2 reading(s), 12.0 MiB)" in transient


def test_a_round_whose_tasks_ran_no_process_says_so_and_shows_no_figure(tmp_path):
    table = rounds_table(load_run(synthetic_run(tmp_path, rounds_read=2)))
    assert table.loc[3, "worker_mib_from"] == "no worker process started in this round"
    assert pd.isna(table.loc[3, "worker_mib_mean"]) and table.loc[3, "workers_counted"] == 0


def test_a_run_without_process_readings_says_its_figure_is_the_estimate(tmp_path):
    run = load_run(rounds_run(tmp_path))
    table = rounds_table(run)
    assert all(source.startswith("estimate: ") for source in table["worker_mib_from"])
    assert table["workers_counted"].isna().all()
    assert worker_notes(run)[0].startswith("per worker (estimate: this run has no process_readings.csv)")


def test_a_worker_whose_parent_was_never_read_is_its_own_tree_and_a_gateway_child_is_not_a_worker():
    readings = pd.concat(
        [
            reading_rows(GATEWAY, 1, 400, T0, T0 + 10),
            reading_rows(STANDING, GATEWAY, 30, T0, T0 + 10),  # read before the load: the gateway's own
            reading_rows(7, STANDING, 5, T0 + 2, T0 + 8),  # the standing child's own child: a worker
            reading_rows(8, 4242, 60, T0 + 3, T0 + 9),  # its parent is not in the target
        ]
    )
    trees = {t.pid: t for t in worker_trees(readings.sort_values("ts"), T0 + 1)}
    assert set(trees) == {7, 8}
    assert trees[8].peak_rss_bytes == 60 * MIB and trees[8].readings == 6
