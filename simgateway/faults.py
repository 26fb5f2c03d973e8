"""Fault injection in front of the mock LLM: concurrency cap (429), random 500s, garbage bodies.

One seeded RNG decides, so a run with the same seed and request order fails the same way. Must not touch
timing or token accounting.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from aiohttp import web

from simgateway.knobs import Knobs

GARBAGE = b"<html><body>upstream sent \x00\xff not what you asked for"


@dataclass
class FaultGate:
    """Counts in-flight chats and answers the faults the knobs ask for, before any work is done."""

    knobs: Knobs
    rng: random.Random
    in_flight: int = 0
    rejected: int = field(default=0)

    def refuse(self, content_type: str) -> web.Response | None:
        """A fault response for this request, or None to serve it (caller then calls enter/leave)."""
        limit = self.knobs.max_concurrent_chats
        if limit is not None and self.in_flight >= limit:
            self.rejected += 1
            return web.json_response(
                {"error": {"message": f"too many concurrent requests (max {limit})", "type": "rate_limit"}},
                status=429,
                headers={"Retry-After": "1"},
            )
        if self.knobs.error_rate and self.rng.random() < self.knobs.error_rate:
            return web.json_response(
                {"error": {"message": "simulated internal error", "type": "server_error"}}, status=500
            )
        if self.knobs.garbage_rate and self.rng.random() < self.knobs.garbage_rate:
            return web.Response(body=GARBAGE, status=200, headers={"Content-Type": content_type})
        return None
