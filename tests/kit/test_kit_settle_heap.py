"""Once the kit is set up its heap is frozen out of the collector's walks, and the youngest generation waits
for a few requests' worth of allocations (kit/runs.py `settle_heap`): what a stream allocates mostly dies
before a pass instead of being moved on to the older generations' (slower, loop-holding) passes."""

from __future__ import annotations

import gc

from kit.runs import YOUNG_OBJECTS, settle_heap


def test_set_up_freezes_the_heap_and_widens_the_youngest_generation():
    before = gc.get_threshold()
    try:
        settle_heap()
        assert gc.get_threshold() == (YOUNG_OBJECTS, *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
