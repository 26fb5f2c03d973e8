"""How the gateway under test counts the kit's synthetic text, learnt from the usage it reports: a prompt
asked in tokens then arrives at that size in the gateway's own count (the simulator's ceil(chars / 4),
LiteLLM's tiktoken with its per-message tokens, a provider's tokeniser).

The count is fitted as tokens = overhead + chars / ratio: the ratio is the text's characters per token,
the overhead what every request adds whatever its length (the chat template's tokens per message, the
agent's tag, which tokenises denser than words). One ratio alone cannot absorb the overhead: fitted to a
mix of sizes it lets the short prompts come out a quarter too large. Until the sizes seen spread enough to
tell the two apart (a fixed size never does, and needs none: one ratio is exact at one size), the pooled
ratio alone is used.

One per run in each load generator (agents/run_context.py), fed by its agents. It sends nothing and
keeps no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scenarios.workloads.synthetic_text import CHARS_PER_WORD

PLAUSIBLE = (2.5, 6.5)  # chars per token any tokeniser gives this text
MAX_OVERHEAD = 64  # tokens a request may add of its own (template, tag); beyond: the gateway added context
GRID = 1.005  # ratios kept on a 0.5 % grid around the default: runs against one gateway cut alike
SPREAD = 1.5  # the longest prompt seen this many times the shortest: the overhead can be told apart
MIN_FIT = 3  # responses before an overhead is fitted


@dataclass(frozen=True)
class Fit:
    """tokens = overhead + chars / chars_per_token, as the kit cuts prompts by it."""

    overhead: float
    chars_per_token: float

    def chars_for(self, tokens: float) -> int:
        """The characters that make `tokens` in the gateway's count (none below its overhead)."""
        return max(0, round((tokens - self.overhead) * self.chars_per_token))


@dataclass
class Calibration:
    """Sums over every response that reported input tokens, for the pooled ratio and for a least-squares
    line weighted by 1 / tokens² (each call's relative error counts alike, the short as the long);
    replies no tokeniser would give are counted apart, not learnt from."""

    chars: float = 0.0
    tokens: float = 0.0
    samples: int = 0
    implausible: int = 0
    fewest_chars: float = math.inf
    most_chars: float = 0.0
    _w: float = 0.0  # Σw, Σwx, Σwy, Σwx², Σwxy with x chars, y tokens, w = 1 / y²
    _wx: float = 0.0
    _wy: float = 0.0
    _wxx: float = 0.0
    _wxy: float = 0.0

    def observe(self, chars: int, tokens: float | None) -> None:
        if not tokens or tokens <= 0 or chars <= 0:
            return
        if not chars / PLAUSIBLE[1] <= tokens <= chars / PLAUSIBLE[0] + MAX_OVERHEAD:
            self.implausible += 1
            return
        self.chars += chars
        self.tokens += tokens
        self.samples += 1
        self.fewest_chars, self.most_chars = min(self.fewest_chars, chars), max(self.most_chars, chars)
        w = 1.0 / tokens**2
        self._w += w
        self._wx += w * chars
        self._wy += w * tokens
        self._wxx += w * chars * chars
        self._wxy += w * chars * tokens

    @property
    def fit(self) -> Fit:
        """The line learnt (the ratio on its grid, the overhead in whole tokens); the pooled ratio alone
        until the sizes seen spread enough, or when the line is not one a tokeniser gives."""
        if not self.samples:
            return Fit(0.0, CHARS_PER_WORD)
        if self.samples >= MIN_FIT and self.most_chars >= SPREAD * self.fewest_chars:
            det = self._w * self._wxx - self._wx**2
            slope = (self._w * self._wxy - self._wx * self._wy) / det if det > 0 else 0.0
            overhead = (self._wy - slope * self._wx) / self._w
            if slope > 0 and PLAUSIBLE[0] <= 1 / slope <= PLAUSIBLE[1] and 0 <= overhead <= MAX_OVERHEAD:
                return Fit(float(round(overhead)), _on_grid(1 / slope))
        return Fit(0.0, _on_grid(self.chars / self.tokens))

    @property
    def chars_per_token(self) -> float:
        """The text's characters per token (the fit's ratio): what a tool result's size is cut at."""
        return self.fit.chars_per_token

    def chars_for(self, tokens: float) -> int:
        return self.fit.chars_for(tokens)

    def describe(self) -> dict:
        """For run.json: the line learnt, from how many responses, and how many were set aside."""
        fit = self.fit
        return {
            "chars_per_token": round(fit.chars_per_token, 4),
            "overhead_tokens": fit.overhead,
            "responses": self.samples,
            "implausible_responses": self.implausible,
            "rule": "input tokens reported = overhead + chars sent / chars_per_token, least squares "
            f"weighted by 1/tokens² once prompts differ {SPREAD:g}x in length (else the pooled ratio); "
            f"replies beyond {PLAUSIBLE[0]} chars a token + {MAX_OVERHEAD} tokens set aside (the gateway "
            "added context of its own)",
        }


def _on_grid(ratio: float) -> float:
    return CHARS_PER_WORD * GRID ** round(math.log(ratio / CHARS_PER_WORD, GRID))
