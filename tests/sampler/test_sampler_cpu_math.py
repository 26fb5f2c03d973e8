"""CPU accounting rules of sampler.cpu, pinned with fake process readings (no processes, no clock)."""

from __future__ import annotations

import pytest

from sampler.cpu import CpuLedger, cpu_percent, host_cpu_percent
from sampler.readings import ProcStat


def proc(pid: int, ppid: int = 1, own: float = 0.0, kids: float = 0.0, born: float = 0.0) -> ProcStat:
    return ProcStat(pid=pid, ppid=ppid, create_time=born, rss_bytes=0, cpu_self_s=own, cpu_children_s=kids)


def test_first_reading_is_a_baseline_not_cpu_used():
    ledger = CpuLedger()
    assert ledger.update([proc(10, own=50.0, kids=7.0)], new_after=100.0) == 0.0


def test_growth_of_own_and_reaped_children_time_is_counted():
    ledger = CpuLedger()
    ledger.update([proc(10, own=5.0, kids=1.0)], new_after=0.0)
    assert ledger.update([proc(10, own=5.5, kids=1.25)], new_after=0.0) == pytest.approx(0.75)


def test_new_process_created_after_last_look_counts_its_whole_life():
    ledger = CpuLedger()
    ledger.update([proc(10)], new_after=0.0)
    total = ledger.update([proc(10), proc(11, ppid=10, own=0.4, born=101.0)], new_after=100.0)
    assert total == pytest.approx(0.4)


def test_process_that_existed_before_last_look_joins_as_a_baseline():
    ledger = CpuLedger()
    ledger.update([proc(10)], new_after=0.0)
    assert ledger.update([proc(10), proc(11, ppid=10, own=9.0, born=50.0)], new_after=100.0) == 0.0


def test_short_lived_child_never_seen_is_counted_through_its_parent():
    ledger = CpuLedger()
    ledger.update([proc(10, own=1.0)], new_after=0.0)
    assert ledger.update([proc(10, own=1.0, kids=0.3)], new_after=0.0) == pytest.approx(0.3)


def test_reaped_child_is_not_counted_twice():
    ledger = CpuLedger()
    ledger.update([proc(10, own=1.0), proc(11, ppid=10, own=2.0)], new_after=0.0)  # baseline
    ledger.update([proc(10, own=1.0), proc(11, ppid=10, own=2.5)], new_after=0.0)  # +0.5 by the child
    # child ran 0.25 s more, exited and was reaped: parent's children time jumps by its whole life, 2.75
    total = ledger.update([proc(10, own=1.1, kids=2.75)], new_after=0.0)
    assert total == pytest.approx(0.5 + 0.25 + 0.1)


def test_child_seen_whole_life_then_reaped_counts_once():
    ledger = CpuLedger()
    ledger.update([proc(10)], new_after=0.0)
    ledger.update([proc(10), proc(11, ppid=10, own=0.2, born=5.0)], new_after=4.0)
    assert ledger.update([proc(10, kids=0.3)], new_after=4.0) == pytest.approx(0.3)


def test_grandchild_and_child_gone_in_one_gap_are_charged_to_the_live_grandparent():
    ledger = CpuLedger()
    stats = [proc(10), proc(11, ppid=10, own=1.0), proc(12, ppid=11, own=2.0)]
    ledger.update(stats, new_after=0.0)
    # 12 ran +0.5 and was reaped by 11 (kids 2.5); 11 ran +0.5 and was reaped by 10 (kids 1.5 + 2.5)
    assert ledger.update([proc(10, kids=4.0)], new_after=0.0) == pytest.approx(1.0)


def test_parent_delta_is_clamped_at_zero_when_a_child_was_not_reaped_into_it():
    ledger = CpuLedger()
    ledger.update([proc(10, own=1.0), proc(11, ppid=10, own=5.0)], new_after=0.0)
    # the child vanished but its parent ignores SIGCHLD, so no children time appears
    assert ledger.update([proc(10, own=1.2)], new_after=0.0) == 0.0


def test_a_recycled_pid_is_a_new_process():
    ledger = CpuLedger()
    ledger.update([proc(10), proc(11, ppid=10, own=8.0, born=1.0)], new_after=0.0)
    # 11 exited and was reaped (parent's kids += 8.1); a new process got pid 11 after the last look
    total = ledger.update([proc(10, kids=8.1), proc(11, ppid=10, own=0.2, born=20.0)], new_after=10.0)
    assert total == pytest.approx(0.1 + 0.2)


def test_cpu_percent_is_cpu_seconds_per_wall_second():
    assert cpu_percent(10.0, 10.5, 100.0, 100.5) == pytest.approx(100.0)
    assert cpu_percent(10.0, 11.0, 100.0, 100.5) == pytest.approx(200.0)


def test_cpu_percent_refuses_a_clock_that_did_not_advance():
    with pytest.raises(ValueError, match="did not advance"):
        cpu_percent(0.0, 1.0, 5.0, 5.0)


def test_host_cpu_percent_is_busy_share_of_all_cores_time():
    assert host_cpu_percent(10.0, 11.0, 100.0, 104.0) == pytest.approx(25.0)
