"""What a run's agents send, parsed once into frozen WorkloadSettings: token-sized synthetic prompts
(input and output distributions, a shared prefix), or a dataset, or a timed trace; the think time
between an agent's requests; the seed every draw derives from.

From the options (`--input-tokens`...) over the workload file (`--workload FILE`), the command line
winning; which option overrides which key is declared with the option (scenarios/workloads/options.py).
Pure: it reads the files it is pointed at and converts; it draws nothing and sends nothing.
Every bad value is a WorkloadError naming the flag, or the file, line and key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contract.units import positive_number
from scenarios import ceilings
from scenarios.errors import WorkloadError
from scenarios.workloads.datasets import ORDERS, Dataset, load_dataset
from scenarios.workloads.distributions import Distribution
from scenarios.workloads.options import FILE_DEST, declared
from scenarios.workloads.tool_loop import SECTIONS as LOOP_SECTIONS
from scenarios.workloads.tool_loop import ToolLoop, tool_loop_of
from scenarios.workloads.traces import BLOCK_TOKENS, Trace, load_trace
from scenarios.workloads.values import distribution_of, seconds_of, tokens_of, whole_of
from scenarios.workloads.workload_file import EXTENSIONS, Value, WorkloadFile, read_workload_file

DEFAULT_SEED = 0
TAIL_QUANTILE = 0.9999  # a drawn size's largest expected: the pool holds twice it (longer slices wrap)
EXTENSIONS.update(
    LOOP_SECTIONS
)  # the agent loop's [tools], [loop] and [subagents] (scenarios/workloads/tool_loop.py)


@dataclass(frozen=True)
class WorkloadSettings:
    """None everywhere (the default): each agent sends its own short fixed prompt with --max-tokens and
    waits its own think time, as the kit always did."""

    input: Distribution | None = None  # input tokens per request, the shared prefix included
    output: Distribution | None = None  # max_tokens per request
    prefix_tokens: int = 0  # a system prompt every request repeats (a prompt cache can hit it)
    dataset: Dataset | None = None
    trace: Trace | None = None
    think: Distribution | None = None  # seconds between an agent's requests; None: the agent's own
    seed: int = DEFAULT_SEED
    file: str | None = None
    sections: Mapping[str, Any] = field(default_factory=dict)  # extension sections ([tools], [loop]...)
    tool_loop: ToolLoop | None = None  # the chat-shaped agents loop with these tools (None: one call)

    @property
    def sized(self) -> bool:
        """Requests are synthetic text of a drawn size (from --input-tokens or the trace's lengths)."""
        return self.input is not None or (self.trace is not None)

    def largest_prompt_tokens(self) -> float:
        """The largest synthetic prompt expected (0: none), at most the context ceiling: what the text
        pool and each agent's prompt in flight are sized by."""
        upper = 0.0
        if self.input is not None:
            upper = self.input.high or self.input.quantile(TAIL_QUANTILE)
        if self.trace is not None:
            upper = max((e.input_tokens or 0) for e in self.trace.entries)
        return min(upper, ceilings.MAX_CONTEXT_TOKENS)

    def describe(self) -> dict:
        """What run.json records: every choice and the seed."""
        return {
            "file": self.file,
            "seed": self.seed,
            "input_tokens": self.input.describe() if self.input else None,
            "output_tokens": self.output.describe() if self.output else None,
            "prefix_tokens": self.prefix_tokens,
            "dataset": self.dataset.describe() if self.dataset else None,
            "trace": self.trace.describe() if self.trace else None,
            "think_time": self.think.describe("s") if self.think else None,
            "sections": sorted(self.sections),
            "tool_loop": self.tool_loop.describe() if self.tool_loop else None,
        }


def read_workload(ns: Any) -> WorkloadSettings:
    """The workload of the parsed options (command line, LOCUST_*, locust.conf, web form)."""
    path = _text(ns, FILE_DEST)
    found = read_workload_file(path) if path else WorkloadFile("")
    options, replaced = _option_fields(ns)
    fields = {k: v for k, v in found.fields.items() if k[0] not in replaced}
    fields.update(options)
    trace = _trace(fields)
    dataset = _dataset(fields)
    settings = WorkloadSettings(
        input=distribution_of(fields, "input", tokens_of),
        output=distribution_of(fields, "output", tokens_of),
        prefix_tokens=whole_of(fields.get(("prefix", "tokens")), 0),
        dataset=dataset,
        trace=trace,
        think=_think(fields),
        seed=whole_of(fields.get(("", "seed")), DEFAULT_SEED),
        file=path,
        sections=found.sections,
        tool_loop=tool_loop_of(found.sections),
    )
    _check_sizes(settings, fields)
    _check_combination(settings, fields)
    return settings


def _option_fields(ns: Any) -> tuple[dict[tuple[str, str], Value], set[str]]:
    """The given options as the workload file's fields, each named by its flag, and the sections given
    whole by an option (`--think-time`: [think]), which replace the file's."""
    out: dict[tuple[str, str], Value] = {}
    whole: set[str] = set()
    for (section, key), action in declared().items():
        value = _text(ns, action.dest)
        if value is None:
            continue
        where = action.option_strings[0]
        if key:
            out[(section, key)] = Value(value, where)
        else:
            out.update({(section, k): v for k, v in _WHOLE_SECTIONS[section](value, where).items()})
            whole.add(section)
    return out, whole


def _think_option(text: str, where: str) -> dict[str, Value]:
    """`0`, `2s` (fixed) or `1s..3s` (uniform between)."""
    if ".." in text:
        low, _, high = text.partition("..")
        return {
            "distribution": Value("uniform", where),
            "min": Value(low.strip(), where),
            "max": Value(high.strip(), where),
        }
    return {"distribution": Value("fixed", where), "mean": Value(text, where)}


_WHOLE_SECTIONS = {"think": _think_option}  # section -> its keys from an option's one text


def _think(fields: dict) -> Distribution | None:
    return distribution_of(fields, "think", seconds_of)


def _positive(field_: Value | None, default: float) -> float:
    """A finite number > 0 (a speed-up), `default` when not given."""
    if field_ is None:
        return default
    try:
        return positive_number(field_.value) if not isinstance(field_.value, bool) else positive_number("")
    except ValueError as exc:
        raise WorkloadError(f"{field_.where} {field_.value!r}: {exc}") from None


def _trace(fields: dict) -> Trace | None:
    path = fields.get(("trace", "file"))
    if path is None:
        for key in ("speed", "block_tokens"):
            if ("trace", key) in fields:
                raise WorkloadError(f"{fields[('trace', key)].where}: needs a trace file (--trace FILE)")
        return None
    speed = _positive(fields.get(("trace", "speed")), 1.0)
    block = whole_of(fields.get(("trace", "block_tokens")), BLOCK_TOKENS)
    return load_trace(str(path.value), speed, max(block, 1))


def _dataset(fields: dict) -> Dataset | None:
    path = fields.get(("dataset", "file"))
    order = fields.get(("dataset", "order"))
    if path is None:
        if order is not None:
            raise WorkloadError(f"{order.where}: needs a dataset file (--dataset FILE)")
        return None
    if order is not None and order.value not in ORDERS:
        raise WorkloadError(f"{order.where} {order.value!r}: use {' or '.join(ORDERS)}")
    return load_dataset(str(path.value), str(order.value) if order else "random")


def _check_sizes(settings: WorkloadSettings, fields: dict) -> None:
    """A prompt of at least one token; a prompt, a prefix and an output within the ceilings
    (scenarios/ceilings.py): the mean, min and max as given, so no draw is larger."""
    if settings.input is not None and settings.input.mean < 1:
        where = _where(fields, "input", "mean")
        raise WorkloadError(f"{where} {settings.input.mean:g}: a prompt is at least 1 token")
    sizes = (("input", settings.input, "a prompt"), ("output", settings.output, "an output"))
    for section, size, what in sizes:
        given = (("mean", size.mean), ("min", size.low), ("max", size.high)) if size else ()
        for key, value in given:
            if value is not None:
                ceilings.check_tokens(value, _where(fields, section, key), what)
    ceilings.check_tokens(settings.prefix_tokens, _where(fields, "prefix", "tokens"), "a prompt's prefix")


def _where(fields: dict, section: str, key: str) -> str:
    """Where the key was written; else where its section was (a uniform's mean comes from min and max)."""
    given = fields.get((section, key))
    if given is not None:
        return given.where
    return next((v.place for (s, _k), v in fields.items() if s == section), f"[{section}] {key}")


def _check_combination(settings: WorkloadSettings, fields: dict) -> None:
    """One source of prompts at a time, a prefix that fits inside the prompt, no sub-agents in a trace."""
    subagents = settings.tool_loop.subagents if settings.tool_loop else None
    if settings.trace is not None and subagents is not None:
        raise WorkloadError(
            f"{subagents.where}: a trace's lines are its requests, and sub-agents would send others; "
            "drop [subagents] or the trace"
        )
    sources = [s for s in ("trace", "dataset") if getattr(settings, s) is not None]
    if len(sources) > 1:
        raise WorkloadError(f"{fields[('dataset', 'file')].where}: a dataset and a trace both give prompts")
    sized = [k for k in fields if k[0] in ("input", "prefix")]
    if sources and sized:
        raise WorkloadError(
            f"{fields[sized[0]].where}: the {sources[0]} gives the prompts; drop the input size"
        )
    if settings.prefix_tokens and settings.input is None:
        raise WorkloadError(f"{fields[('prefix', 'tokens')].where}: needs an input size (--input-tokens)")
    prefix = settings.prefix_tokens
    if settings.input is not None and prefix and prefix >= settings.input.mean:
        raise WorkloadError(
            f"{fields[('prefix', 'tokens')].where} {settings.prefix_tokens}: the prefix is part of the "
            f"input; it must be below the input mean {settings.input.mean:g}"
        )


def _text(ns: Any, name: str) -> str | None:
    value = getattr(ns, name, None)
    return None if value is None or value == "" else str(value)
