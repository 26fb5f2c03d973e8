"""Real resident memory for the simulator's memory knobs: allocate, touch every page, read it back.

Blocks are anonymous mmaps (not malloc'd bytearrays) so closing one returns it to the OS at once; this
module must not decide how much to allocate or when: callers own the knobs.
"""

from __future__ import annotations

import mmap

MIB = 1024 * 1024
PAGE = mmap.PAGESIZE


def allocate_touched(mib: float) -> mmap.mmap | None:
    """A block of `mib` MiB with a non-zero byte written into every page, so all of it is resident.

    Writing (not reading) matters: a read of untouched anonymous memory maps the shared zero page and
    adds nothing to RSS. Returns None for 0 MiB.
    """
    size = int(round(mib * MIB))
    if size <= 0:
        return None
    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    pages = (size + PAGE - 1) // PAGE
    block[::PAGE] = b"\x01" * pages
    return block


def read_every_page(block: mmap.mmap | None) -> int:
    """Read one byte of every page (no write), so a forked child maps shared pages without copying them."""
    if block is None:
        return 0
    return sum(block[::PAGE])


def free(block: mmap.mmap | None) -> None:
    """Unmap a block now (its pages leave RSS immediately)."""
    if block is not None:
        block.close()
