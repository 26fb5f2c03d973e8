"""The workload's command-line options (docs/workloads.md), each declared once with the workload file's key
it overrides: Locust's parser registers them (kit/options.py), and the workload reader
(scenarios/workloads/settings.py) finds which option overrides which key from these same declarations.

Registration only: text defaulting to None (scenarios/workloads/settings.py converts it); the workload room
owns
them, below the run, so its reader needs nothing of kit/ to know them.
"""

from __future__ import annotations

import argparse
from typing import Any

import configargparse

from contract.cli import add, workload_options
from scenarios.workloads.datasets import ORDERS
from scenarios.workloads.distributions import KINDS

FILE_DEST = "workload_file"  # --workload FILE: the file the other options override
_SIZES = (
    ("input", "input tokens per request, the shared prefix included"),
    ("output", "output tokens per request, sent as max_tokens (instead of --max-tokens)"),
)


def add_arguments(parser: Any) -> Any:
    """The workload group with its options; returned, for the options of rooms above (record and replay)."""
    workload = parser.add_argument_group("loadkit: workload", "what agents send (docs/workloads.md)")
    add(
        workload,
        "--workload",
        dest=FILE_DEST,
        form_group="workload",
        default=None,
        help="workload file (TOML; examples/workloads/); the options below override its values",
    )
    for name, what in _SIZES:
        _add_size(workload, name, what)
    add(
        workload,
        "--prefix-tokens",
        form_group="workload",
        workload_key=("prefix", "tokens"),
        default=None,
        help="a shared prefix (system prompt) of N tokens every request repeats, part of --input-tokens",
    )
    add(
        workload,
        "--dataset",
        workload_key=("dataset", "file"),
        default=None,
        help="JSONL of OpenAI messages lists or ShareGPT conversations",
    )
    add(
        workload,
        "--dataset-order",
        workload_key=("dataset", "order"),
        choices=ORDERS,
        default=None,
        help="random (seeded, the default) or sequential (the file's order, cycled)",
    )
    add(
        workload,
        "--trace",
        workload_key=("trace", "file"),
        default=None,
        help="JSONL trace (AIPerf's: timestamp, input_length, output_length...) replayed at its own timing",
    )
    add(
        workload,
        "--trace-speed",
        workload_key=("trace", "speed"),
        default=None,
        help="replay the trace this many times faster (default 1)",
    )
    add(
        workload,
        "--think-time",
        form_group="workload",
        workload_key=("think", ""),
        default=None,
        help="pause between an agent's requests: 0, 2s or 1s..3s (default: each agent's own, 0.5-1.5 s chat)",
    )
    add(
        workload,
        "--seed",
        workload_key=("", "seed"),
        default=None,
        help="seed of every draw (prompts, sizes, think times); default 0",
    )
    return workload


def _add_size(workload: Any, name: str, what: str) -> None:
    """A size's mean (in the start form) and its spread, bounds and distribution: [input] or [output]."""
    flag = f"--{name}-tokens"
    add(workload, flag, form_group="workload", workload_key=(name, "mean"), default=None, help=f"mean {what}")
    spread = (
        ("stdev", f"spread of {flag} (default 0)"),
        ("min", f"smallest {flag} drawn (clipped)"),
        ("max", f"largest {flag} drawn (clipped)"),
    )
    for key, text in spread:
        add(workload, f"{flag}-{key}", workload_key=(name, key), default=None, help=text)
    add(
        workload,
        f"{flag}-distribution",
        workload_key=(name, "distribution"),
        choices=KINDS,
        default=None,
        help=f"distribution of {flag} (default: fixed, normal with a stdev)",
    )


def declared() -> dict[tuple[str, str], argparse.Action]:
    """(section, key) -> the option overriding it, read off these declarations registered on a parser of
    their own: the reader sees what Locust's parser sees, a renamed option included."""
    parser = configargparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return workload_options(parser._actions)
