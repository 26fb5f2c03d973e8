"""How many characters of the kit's synthetic text make one token for the gateway under test, learnt
from the usage the gateway reports: a prompt asked in tokens then arrives at that size in the gateway's
own count (the simulator's ceil(chars / 4), LiteLLM's tiktoken, a provider's tokeniser).

One per load generator, fed by its agents. It sends nothing and keeps no clock.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

from scenarios.synthetic_text import CHARS_PER_WORD

PLAUSIBLE = (2.5, 6.5)  # chars per token any tokeniser gives this text; outside: the gateway adds its own
GRID = 1.005  # ratios kept on a 0.5 % grid around the default: runs against one gateway cut alike
_CALIBRATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class Calibration:
    """The pooled ratio of the characters sent to the input tokens reported, over every response that
    reported them; replies whose ratio no tokeniser would give are counted apart, not learnt from."""

    chars: float = 0.0
    tokens: float = 0.0
    samples: int = 0
    implausible: int = 0

    def observe(self, chars: int, tokens: float | None) -> None:
        if not tokens or tokens <= 0 or chars <= 0:
            return
        if not PLAUSIBLE[0] <= chars / tokens <= PLAUSIBLE[1]:
            self.implausible += 1
            return
        self.chars += chars
        self.tokens += tokens
        self.samples += 1

    @property
    def chars_per_token(self) -> float:
        if not self.samples:
            return CHARS_PER_WORD
        steps = round(math.log(self.chars / self.tokens / CHARS_PER_WORD, GRID))
        return CHARS_PER_WORD * GRID**steps

    def describe(self) -> dict:
        """For run.json: the ratio learnt, from how many responses, and how many were set aside."""
        return {
            "chars_per_token": round(self.chars_per_token, 4),
            "responses": self.samples,
            "implausible_responses": self.implausible,
            "rule": f"chars sent / input tokens reported, pooled; ratios outside {PLAUSIBLE[0]}-"
            f"{PLAUSIBLE[1]} chars per token set aside (the gateway added context of its own)",
        }


def calibration_of(environment: Any) -> Calibration:
    """The load generator's calibration (one per Locust environment)."""
    found = _CALIBRATIONS.get(environment)
    if found is None:
        found = _CALIBRATIONS[environment] = Calibration()
    return found
