"""The mock LLM's prompt cache (`--prefix-cache-block N`): a call's cached tokens are the leading whole
blocks of its prompt that an earlier call sent, as providers' prefix caches and vLLM's automatic prefix
caching count them; a known truth for a workload's shared prefix.

Holds one hash per block (chained, so a block counts only after the same blocks before it), the oldest
forgotten first beyond a bound. Counts tokens as the simulator does (4 characters each); no I/O.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence

from simgateway.usage import Tokens

CHARS_PER_TOKEN = 4  # the simulator's count: ceil(chars / 4)
MESSAGE_SEPARATOR = "\x1e"  # between message texts, so a block never spans two messages unnoticed
CAPACITY = 1_000_000  # blocks remembered (about 100 MB of hashes at most)


class PrefixCache:
    def __init__(self, block_tokens: int, capacity: int = CAPACITY) -> None:
        self.block_tokens = block_tokens
        self.block_chars = block_tokens * CHARS_PER_TOKEN
        self.capacity = capacity
        self.seen: OrderedDict[int, None] = OrderedDict()

    def cached_tokens(self, texts: Sequence[str]) -> int:
        """Tokens of this prompt's leading blocks seen before; every block of it is remembered."""
        text = MESSAGE_SEPARATOR.join(texts)
        size, chain, hits, hitting = self.block_chars, 0, 0, True
        for start in range(0, len(text) - size + 1, size):
            chain = hash((chain, text[start : start + size]))
            if hitting and chain in self.seen:
                hits += 1
                self.seen.move_to_end(chain)
                continue
            hitting = False
            self.seen[chain] = None
        while len(self.seen) > self.capacity:
            self.seen.popitem(last=False)
        return hits * self.block_tokens

    def apply(self, tokens: Tokens, texts: Sequence[str]) -> Tokens:
        """The call's token counts with its cache hits (never more than its prompt)."""
        cached = min(self.cached_tokens(texts), tokens.prompt)
        return dataclasses.replace(
            tokens, cached=cached, cache_write=min(tokens.cache_write, tokens.prompt - cached)
        )
