"""The sampler service's memory of its rows: numbered from 0 in the order written, the last `keep` kept,
read back from a cursor. Thread-safe (the sampling loop writes while HTTP threads read); no I/O.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from itertools import islice


@dataclass(frozen=True)
class Page:
    """Rows `[start, next)`; `lost` rows the reader asked for were already dropped (buffer full)."""

    first: int  # number of the oldest row still kept
    next: int  # cursor for the next read
    lost: int
    rows: list[dict[str, str]]


class RowBuffer:
    def __init__(self, keep: int) -> None:
        self._rows: deque[dict[str, str]] = deque(maxlen=keep)
        self._next = 0
        self._lock = threading.Lock()

    def write(self, row: dict[str, str]) -> None:
        with self._lock:
            self._rows.append(row)
            self._next += 1

    def close(self) -> None:
        """Rows stay readable after the sampling loop ends (the service answers until stopped)."""

    def since(self, cursor: int, limit: int) -> Page:
        """Up to `limit` rows numbered `cursor` and later; a cursor beyond the end reads nothing."""
        with self._lock:
            first = self._next - len(self._rows)
            start = min(max(cursor, first), self._next)
            rows = list(islice(self._rows, start - first, start - first + limit))
        return Page(first=first, next=start + len(rows), lost=max(0, first - cursor), rows=rows)
