"""Values in file units shown as people read them, and read back: sizes and durations as they are typed."""

from __future__ import annotations

import pytest

from contract.units import parse_duration, parse_size, show, show_field, unit_of


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (192_090_112, "bytes", "183.2 MiB"),
        (1024**3, "bytes", "1 GiB"),
        (2.5 * 1024**3, "bytes", "2.5 GiB"),
        (512 * 1024, "bytes", "512 KiB"),
        (478.2605542268846, "ms", "478.3 ms"),
        (12_345.6, "ms", "12,346 ms"),
        (0.125, "ratio", "12.5 %"),
        (55.55, "pct", "55.5 %"),
        (3, "count", "3"),
        (270, "s", "4m30s"),
        (5400, "s", "1h30m"),
        (1.5, "s", "1.5s"),
        (None, "ms", "—"),
        (float("nan"), "bytes", "—"),
    ],
)
def test_show_reads_as_people_read(value, unit, shown):
    assert show(value, unit) == shown


def test_shown_sizes_and_durations_parse_back():
    assert parse_size(show(1024**3, "bytes")) == 1024**3
    assert parse_duration(show(5400, "s")) == 5400


def test_a_name_says_its_unit():
    assert [unit_of(n) for n in ("target_rss_bytes", "ttft_ms", "hold_s", "host_cpu_pct", "users")] == [
        "bytes",
        "ms",
        "s",
        "pct",
        "count",
    ]
    assert (show_field("memory_budget_bytes", 1024**3), show_field("levels", [6, 8])) == ("1 GiB", "6, 8")
    assert (show_field("capacity_metric", "rss"), show_field("round_hold_s", None)) == ("rss", "—")
