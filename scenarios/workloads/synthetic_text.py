"""Seeded synthetic text of a given size: a long pool of words made once, from which every prompt is a
slice (cutting is cheap; building text per request is not).

The words are each one token, with their leading space, in OpenAI's cl100k_base and o200k_base
tokenisers, and average four characters with that space: so a tokeniser of that kind and the simulator's
ceil(chars / 4) both count about chars / 4 tokens, and calibration (agents/calibration.py) only corrects
what another tokeniser counts differently. Pure: no clock, no I/O; randomness from the caller's seed.
"""

from __future__ import annotations

import random

_TWO = "an as at be by do go he if in is it me my no of on or so to up us we".split()
_THREE = (
    "the and for are but not you all any can had her was one our out day get has him his how man new now "
    "old see two way who boy did its let put say she too use act add age ago air art ask bad bag bed big "
    "bit box bus buy car cat cut dog dry due eat end eye far few fit fly fun god got gun hit hot ice job "
    "key kid law lay leg lie lot low map mix net nor oil own pay per pen pop pro raw red row run sad sat "
    "sea set sit six sky son sun tax tea ten tie top toy try war web wet win yes yet"
).split()
_FOUR = (
    "that with have this will your from they know want been good much some time very when come here just "
    "like long make"
).split()
# As many two- as four-letter words: the mean word is three letters, four characters with its space.
VOCABULARY: tuple[str, ...] = tuple(_TWO + _FOUR + _THREE)
CHARS_PER_WORD = 4.0  # the vocabulary's mean, its leading space included
MIN_POOL_CHARS = 256 * 1024


class TextPool:
    """A pool of `chars` characters or more: " word word word ...", every word after a space, made
    from `seed`. A slice starts and ends at a word boundary, so it never splits a token."""

    def __init__(self, seed: str, chars: int) -> None:
        words = max(int(max(chars, MIN_POOL_CHARS) / CHARS_PER_WORD), 16)
        self.text = " " + " ".join(random.Random(seed).choices(VOCABULARY, k=words))
        self.ascii = memoryview(self.text.encode("ascii"))  # the same text as bytes: a slice is a view

    def __len__(self) -> int:
        return len(self.text)

    def slice(self, start: int, chars: int) -> str:
        """About `chars` characters from the word at or after `start` (taken modulo the pool), cut at the
        word boundary nearest the size asked; longer than the pool, it wraps around."""
        return self.piece(start, chars)[0]

    def piece(self, start: int, chars: int) -> tuple[str, memoryview | bytes]:
        """`slice`, and the same text as bytes: a view of the pool's own, not a copy (a 100K-token
        prompt's 400 KB), or for a slice that wraps around, its encoding."""
        if chars <= 0:
            return "", b""
        text = self.text
        size = len(text)
        if chars > size // 2:
            long = self._long(start, chars)
            return long, long.encode("ascii")
        a = text.find(" ", start % (size - chars - 1))  # room for the slice after its start
        end = a + chars
        after = text.find(" ", end)
        after = size if after < 0 else after
        before = text.rfind(" ", a + 1, end + 1)
        cut = before if before > a and end - before <= after - end else after
        return text[a:cut], self.ascii[a:cut]

    def _long(self, start: int, chars: int) -> str:
        """A slice of more than half the pool: whole copies of it rotated to `start`, then a cut."""
        text = self.text
        a = text.find(" ", start % len(text))
        a = 0 if a < 0 else a
        rotated = text[a:] + text[:a]
        repeated = rotated * (chars // len(text) + 2)
        cut = repeated.find(" ", chars)
        return repeated[:cut]
