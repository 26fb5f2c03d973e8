"""Cgroup back-end: the processes of a cgroup and its memory files, v2 or v1, as one CgroupReading.

v2: memory.current, memory.peak, memory.stat anon/file. v1: memory.usage_in_bytes,
memory.max_usage_in_bytes, memory.stat total_rss/total_cache (rss/cache without hierarchy). No summing.
"""

from __future__ import annotations

from pathlib import Path

from sampler.readings import CgroupReading


def parse_memory_stat(text: str) -> dict[str, int]:
    """`key value` lines of memory.stat as a dict."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def memory_from_files(files: dict[str, str]) -> CgroupReading:
    """Map whichever version's files were present (name -> text) onto one reading."""
    stat = parse_memory_stat(files.get("memory.stat", ""))
    if "memory.current" in files:
        return CgroupReading(
            memory_bytes=_int(files.get("memory.current")),
            peak_bytes=_int(files.get("memory.peak")),
            anon_bytes=stat.get("anon"),
            file_bytes=stat.get("file"),
        )
    return CgroupReading(
        memory_bytes=_int(files.get("memory.usage_in_bytes")),
        peak_bytes=_int(files.get("memory.max_usage_in_bytes")),
        anon_bytes=stat.get("total_rss", stat.get("rss")),
        file_bytes=stat.get("total_cache", stat.get("cache")),
    )


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


_MEMORY_FILES = (
    "memory.current",
    "memory.peak",
    "memory.usage_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.stat",
)


def read_memory(path: Path) -> CgroupReading:
    """The cgroup's memory now; every field None when it has no memory files (or is gone)."""
    files = {}
    for name in _MEMORY_FILES:
        try:
            files[name] = (path / name).read_text()
        except OSError:
            continue
    return memory_from_files(files)


def read_procs(path: Path) -> set[int]:
    """Pids in the cgroup; empty when it was removed."""
    try:
        return {int(line) for line in (path / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def is_cgroup(path: Path) -> bool:
    return (path / "cgroup.procs").is_file()


def combine(readings: list[CgroupReading]) -> CgroupReading | None:
    """Several cgroups as one: each field summed over the cgroups that report it (None if none do)."""
    if not readings:
        return None

    def total(name: str) -> int | None:
        values = [getattr(r, name) for r in readings if getattr(r, name) is not None]
        return sum(values) if values else None

    return CgroupReading(total("memory_bytes"), total("peak_bytes"), total("anon_bytes"), total("file_bytes"))
