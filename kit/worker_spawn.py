"""A Locust worker's spawn message at the cost of one argument-parser build, not one per option.

Locust 2.47's `WorkerRunner.handle_message("spawn")` keeps the master's options that are not Locust's own
with `k not in argument_parser.default_args_dict()` inside a comprehension: the whole parser is built
(~1 ms quiet, ~7 ms busy here) once per option, for every spawn message. With the kit's options that is
0.15-1 s of a worker's CPU per message; shaped profiles send one per change of the user count, heartbeats
starve and the master marks the worker missing. No hook reaches that comprehension, so on a worker (only
there, once, at init) the module function is replaced by a cache of its own result: Locust's parser
without any plugin's options, which cannot change while the process runs (it reads no config file). The
cache hands out a copy, as the original returns a new dict. Reported upstream: docs/field-notes.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from locust import argument_parser


def install() -> None:
    """Cache `locust.argument_parser.default_args_dict` for this process, built now (so no spawn message
    pays for it); idempotent."""
    if not getattr(argument_parser.default_args_dict, "loadkit_cached", False):
        argument_parser.default_args_dict = cached(argument_parser.default_args_dict)
    argument_parser.default_args_dict()


def cached(build: Callable[[], dict]) -> Callable[[], dict]:
    once = functools.cache(build)

    @functools.wraps(build)
    def default_args_dict() -> dict:
        return dict(once())

    default_args_dict.loadkit_cached = True  # type: ignore[attr-defined]
    return default_args_dict
