"""The ceiling of every size and count a run may ask for, in one place with its reason: the protocol's
(what any model's context holds, what any tool-calling API offers) and the machine's (what the load
generator's memory holds). A value above its ceiling is refused before anything starts, with one line
naming the value, the ceiling and why; below it, generation is bounded by it (prompts are slices of a
pool at most twice the largest prompt, drawn sizes clipped to the ceiling).

Pure: the machine's memory is handed in by the caller (kit/settings.py reads it).

The ceilings that live with what they bound, each with its reason: a duration (contract/units.py
MAX_DURATION_S, 30 days), a hand-written file (contract/textfile.py MAX_TEXT_BYTES, 4 MiB: thresholds,
prices, specs, workloads, datasets, traces), the users of one load generator (scenarios/options.py
MAX_USERS), thresholds per run (scenarios/thresholds.py MAX_THRESHOLDS), a price per million tokens
(analysis/prices.py MAX_PRICE_PER_M: the analysis layer cannot import this one).
"""

from __future__ import annotations

from contract.units import MAX_DURATION_S, show
from scenarios.errors import WorkloadError

# The largest context any model offers (Llama 4 Scout: 10 M tokens; Gemini 1.5 Pro: 2 M): a prompt, an
# output, a prompt's tools or a trace line larger than this fits in no model. 1 M tokens is legitimate.
MAX_CONTEXT_TOKENS = 10_000_000
# The output lives in the same context: max_tokens above the context is a request no model can honour.
MAX_OUTPUT_TOKENS = MAX_CONTEXT_TOKENS
# Tools offered per request: OpenAI accepts 128, and no tool-calling API documents more than a few hundred;
# 1024 leaves room for a gateway that merges agents' lists, and each schema is built and sent every call.
MAX_TOOLS = 1024
TOOLS_WHY = "tools offered per request: OpenAI accepts 128; each schema is built and sent every call"
# Model calls per task: each step appends a tool call and its result to the conversation the agent keeps
# (and re-sends); 1000 steps of even 10 tokens each is a 10 k-token history, far beyond any real loop.
MAX_STEPS = 1000
STEPS_WHY = "each step's call and result stay in the conversation the agent keeps and re-sends"
# Sub-agents one step spawns at once: each is a conversation the load generator holds and a connection of
# its agent's own; real fan-outs are a handful (a coding agent's parallel tasks: about 10).
MAX_SUBAGENTS = 64
SUBAGENTS_WHY = "each runs at once, a conversation the load generator holds and a connection of its own"
# A trace's span, after the speed-up: the longest a run may last (contract/units.py's 30 days).
MAX_TRACE_SPAN_S = MAX_DURATION_S
# Characters a load generator holds per token of a prompt: the pool (twice the largest prompt) plus, per
# agent in flight, the prompt and its encoded request body; 4 characters a token (synthetic_text.py).
CHARS_PER_TOKEN_HELD = 4
COPIES_PER_AGENT = 2
POOL_COPIES = 2
# The share of the machine's memory a load generator's prompt text may take (the rest: Locust, the
# gateway under test, the sampler, the OS).
MEMORY_SHARE = 0.5


def check_tokens(value: float, where: str, what: str, ceiling: int = MAX_CONTEXT_TOKENS) -> None:
    """`value` tokens of `what` (a prompt, an output) at most `ceiling`."""
    if value > ceiling:
        raise WorkloadError(
            f"{where} {show(value, 'count')}: above the ceiling of {ceiling:,} tokens for {what} "
            "(the largest context any model offers)"
        )


def check_tools(count: int, where: str) -> None:
    """The tools a request offers, at most MAX_TOOLS."""
    _check_count(count, where, MAX_TOOLS, TOOLS_WHY)


def check_steps(steps: int, where: str) -> None:
    """The model calls a task may take, at most MAX_STEPS."""
    _check_count(steps, where, MAX_STEPS, STEPS_WHY)


def check_subagents(count: int, where: str) -> None:
    """The children one step spawns at once, at most MAX_SUBAGENTS."""
    _check_count(count, where, MAX_SUBAGENTS, SUBAGENTS_WHY)


def _check_count(value: int, where: str, ceiling: int, why: str) -> None:
    if value > ceiling:
        raise WorkloadError(f"{where} {value:,}: above the ceiling of {ceiling:,} ({why})")


def check_span(span_s: float, where: str) -> None:
    """A trace's span (its last line's due time) at most MAX_TRACE_SPAN_S."""
    if span_s > MAX_TRACE_SPAN_S:
        raise WorkloadError(
            f"{where}: the trace spans {span_s:,.0f} s after the speed-up, above the ceiling of "
            f"{MAX_TRACE_SPAN_S:,.0f} s (30 days: the longest run)"
        )


def text_bytes(largest_prompt_tokens: float, agents: int) -> int:
    """Bytes of prompt text a load generator holds: the pool and each agent's prompt in flight."""
    copies = POOL_COPIES + COPIES_PER_AGENT * max(agents, 1)
    return int(largest_prompt_tokens * CHARS_PER_TOKEN_HELD * copies)


def check_memory(largest_prompt_tokens: float, agents: int, machine_bytes: int, where: str) -> None:
    """The prompt text of `agents` agents fits in MEMORY_SHARE of the machine's memory."""
    needed, room = text_bytes(largest_prompt_tokens, agents), int(machine_bytes * MEMORY_SHARE)
    if needed > room:
        raise WorkloadError(
            f"{where} {largest_prompt_tokens:,.0f} tokens for {agents:,} agents: their prompt text takes "
            f"about {show(needed, 'bytes')}, above the ceiling of {show(room, 'bytes')} (half this "
            "machine's memory); use smaller prompts, fewer agents, or Locust workers on more machines"
        )
