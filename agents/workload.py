"""Each agent's draws from the run's workload: the next request's messages (or one text), its max_tokens
and the sizes asked, and the think time before it.

Every agent draws from streams of its own, seeded from (--seed, worker index, agent number): two runs
with one seed send the same prompts, and the workers of a distributed run never draw the same ones.
Prompts are slices of one text pool per load generator (made once), cut to the calibrated characters
per token (agents/calibration.py); nothing is built per request but one string joined.
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from agents.calibration import Calibration
from agents.run_context import context_of
from agents.wire.request_body import SharedParts, TextMessage
from contract.schema import REQUEST
from scenarios.ceilings import MAX_CONTEXT_TOKENS
from scenarios.workloads.datasets import text_of
from scenarios.workloads.settings import WorkloadSettings
from scenarios.workloads.synthetic_text import CHARS_PER_WORD, TextPool
from scenarios.workloads.traces import TraceEntry

_BLOCK_HASH = 2654435761  # Knuth's multiplicative hash: a hash id's block starts at a fixed place
_BLOCKS_KEPT = 4096  # a trace's blocks kept cut (a trace may name millions: memory stays bounded)
_SHARED_KEEP = 4  # workloads whose text is kept per process (each web UI start parses the options anew)


@dataclass(frozen=True)
class Draw:
    """One request's worth: what to send and what was asked. `asked_in` is None when the request's size
    was not asked (a dataset's conversation, a fixed prompt); `sized` draws calibrate the text."""

    messages: tuple[dict, ...]
    max_tokens: int
    asked_in: int | None = None
    asked_out: int | None = None
    session: str | None = None  # a trace's session id
    sized: bool = False

    @property
    def text(self) -> str:
        """The messages as one text, for agents that send a text (task boards, runs, A2A...)."""
        return text_of(self.messages)

    @property
    def chars(self) -> int:
        return sum(len(m["content"]) for m in self.messages if isinstance(m.get("content"), str))

    def asked(self, sends_max_tokens: bool = True) -> dict[str, Any]:
        """The requests.csv fields of what was asked; no output size for a protocol that cannot ask one
        (a Hermes run, an A2A message...)."""
        return {
            REQUEST.asked_tokens_in: self.asked_in,
            REQUEST.asked_tokens_out: self.asked_out if sends_max_tokens else None,
        }


@dataclass
class SharedText:
    """Per load generator and workload: the pool every slice comes from, the shared prefix (and its system
    message, one for every draw), the dataset's or trace's cursor for draws taken in order, and the
    body parts every agent sends alike, encoded once (agents/wire/request_body.py)."""

    pool_: TextPool | None  # made only for sized workloads (a fixed prompt or a dataset needs none)
    prefix: str
    block_chars: int
    blocks: dict[int, str] = field(default_factory=dict)
    cursor: itertools.count = field(default_factory=itertools.count)
    parts: SharedParts = field(default_factory=SharedParts)

    @functools.cached_property
    def system(self) -> dict | None:
        """The shared prefix's system message: one object, so its encoding is found and reused."""
        return {"role": "system", "content": self.prefix} if self.prefix else None

    @property
    def pool(self) -> TextPool:
        assert self.pool_ is not None, "a sized workload has a pool"
        return self.pool_

    def block(self, hash_id: int) -> str:
        """A trace's prompt block: the same text wherever the hash id recurs (a prompt cache can hit)."""
        found = self.blocks.get(hash_id)
        if found is None:
            start = hash_id * _BLOCK_HASH % len(self.pool)
            found = self.pool.slice(start, self.block_chars)  # the same slice every time: kept for speed
            if len(self.blocks) < _BLOCKS_KEPT:
                self.blocks[hash_id] = found
        return found


class AgentWorkload:
    """One agent's share of the workload (made on first use, see KitAgent.workload)."""

    def __init__(
        self, workload: WorkloadSettings, max_tokens: int, stream: str, tag: str, calibration: Calibration
    ) -> None:
        self.workload = workload
        self.max_tokens = max_tokens
        self.tag = tag
        self.stream = stream  # this agent's seed stream: other draws of its own (tool runs) derive from it
        self.calibration = calibration
        self.prompts = random.Random(f"{workload.seed}/{stream}/prompts")
        self.pauses = random.Random(f"{workload.seed}/{stream}/think")
        self.shared = shared_text(workload)
        self.sized_drawn = 0  # synthetic prompts drawn: each one's tag numbers it, so no two are alike

    def next_request(self, default_text: str, arrival: int | None = None) -> Draw:
        """The next request: the trace's line `arrival`, a dataset conversation, synthetic text of a drawn
        size, or (no workload) the agent's own fixed `default_text` as today."""
        workload = self.workload
        if workload.trace is not None:
            return self._traced(self._entry(arrival))
        if workload.dataset is not None:
            conversations = workload.dataset.conversations
            if workload.dataset.order == "sequential":
                index = next(self.shared.cursor) % len(conversations)
            else:
                index = self.prompts.randrange(len(conversations))
            return as_sent(conversations[index], self._max_tokens())
        if workload.input is not None:
            return self._synthetic(self._size(workload.input.draw(self.prompts)), self._max_tokens())
        return as_sent(({"role": "user", "content": default_text},), self._max_tokens())

    @property
    def asks_output(self) -> bool:
        """The workload sets output sizes (else max_tokens is --max-tokens, sent only where it always was)."""
        return self.workload.output is not None or self.workload.trace is not None

    def think(self) -> float | None:
        """Seconds to wait before the next request; None: the agent's own default."""
        think = self.workload.think
        return None if think is None else think.draw(self.pauses)

    def observe(self, draw: Draw, tokens_in: float | None, calls: int = 1, as_text: bool = False) -> None:
        """The input tokens the gateway reported for a draw (per call, when a task made `calls`)."""
        if draw.sized and tokens_in:
            self.calibration.observe(len(draw.text) if as_text else draw.chars, tokens_in / max(calls, 1))

    def _max_tokens(self) -> int:
        """The workload's output size drawn, else --max-tokens."""
        output = self.workload.output
        return self._size(output.draw(self.prompts)) if output is not None else self.max_tokens

    def _synthetic(self, asked_in: int, max_tokens: int, entry: TraceEntry | None = None) -> Draw:
        """Text whose characters make `asked_in` tokens in the calibrated count, the shared prefix (a
        system message) and this agent's tag with the prompt's number included; a trace's hash-id
        blocks lead, the tag last."""
        shared = self.shared
        self.sized_drawn += 1
        tag = f"{self.tag[:-1]} req {self.sized_drawn}]"  # a prompt cache hits the shared part only
        budget = max(0, self.calibration.chars_for(asked_in) - len(shared.prefix) - len(tag))
        hash_ids = entry.hash_ids if entry is not None else ()
        # the pool's words need no JSON escaping: the message's JSON is made as it is (a copy, not a scan)
        if hash_ids:
            user = TextMessage.of("user", "", self._blocks(hash_ids, budget), tag)
        else:
            plain, utf8 = shared.pool.piece(self.prompts.randrange(len(shared.pool)), budget)
            user = TextMessage.of("user", tag, plain, plain_utf8=utf8)
        messages: tuple[dict, ...] = (user,)
        if shared.system is not None:
            messages = (shared.system, *messages)
        session = entry.session_id if entry is not None else None
        return Draw(messages, max_tokens, asked_in, max_tokens, session, sized=True)

    def _blocks(self, hash_ids: tuple[int, ...], budget: int) -> str:
        text = "".join(self.shared.block(h) for h in hash_ids)
        if len(text) < budget:
            text += self.shared.pool.slice(self.prompts.randrange(len(self.shared.pool)), budget - len(text))
        cut = text.find(" ", budget)
        return text if cut < 0 else text[:cut]

    def _entry(self, arrival: int | None) -> TraceEntry:
        assert self.workload.trace is not None
        entries = self.workload.trace.entries
        return entries[(next(self.shared.cursor) if arrival is None else arrival) % len(entries)]

    def _traced(self, entry: TraceEntry) -> Draw:
        max_tokens = entry.output_tokens if entry.output_tokens is not None else self._max_tokens()
        if entry.messages is not None:
            return as_sent(entry.messages, max_tokens, entry.session_id)
        assert entry.input_tokens is not None  # the trace parser requires one of the two
        return self._synthetic(entry.input_tokens, max_tokens, entry)

    @staticmethod
    def _size(value: float) -> int:
        """A drawn size in whole tokens, within the context ceiling (a normal's or lognormal's tail)."""
        return max(1, min(round(value), MAX_CONTEXT_TOKENS))


def as_sent(messages: tuple[dict, ...], max_tokens: int, session: str | None = None) -> Draw:
    """Messages sent as they are (a fixed prompt, a dataset's or a trace's): no input size asked."""
    return Draw(messages, max_tokens, None, max_tokens, session)


def agent_workload(environment: Any, workload: WorkloadSettings, max_tokens: int, agent: int, tag: str):
    """The workload of agent number `agent` of this load generator (its worker index from Locust)."""
    worker = getattr(environment.runner, "worker_index", 0) if environment.runner is not None else 0
    stream = f"w{max(worker, 0)}/a{agent}"
    return AgentWorkload(workload, max_tokens, stream, tag, context_of(environment).calibration)


_SHARED: dict[int, tuple[WorkloadSettings, SharedText]] = {}


def shared_text(workload: WorkloadSettings) -> SharedText:
    """The load generator's text for this workload, made once (the pool takes tens of ms to make)."""
    found = _SHARED.get(id(workload))
    if found is not None and found[0] is workload:
        return found[1]
    pool = TextPool(f"loadkit/{workload.seed}", _pool_chars(workload)) if workload.sized else None
    prefix = pool.slice(0, round(workload.prefix_tokens * CHARS_PER_WORD)).lstrip() if pool else ""
    block_chars = round((workload.trace.block_tokens if workload.trace else 0) * CHARS_PER_WORD)
    shared = SharedText(pool, prefix, block_chars)
    while len(_SHARED) >= _SHARED_KEEP:
        del _SHARED[next(iter(_SHARED))]
    _SHARED[id(workload)] = (workload, shared)
    return shared


def _pool_chars(workload: WorkloadSettings) -> int:
    """Twice the largest prompt expected, in characters at the default ratio (a longer draw wraps)."""
    return int(2 * workload.largest_prompt_tokens() * CHARS_PER_WORD)
