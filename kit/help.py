"""`python -m kit.help`: the kit's own options with their help text, as Locust's parser shows them.

Locust 2.47 answers `--help` before it imports a locustfile, so `locust -f locustfile.py --help` can list
only Locust's own options; this prints the rest. It registers options and prints; it runs nothing.
"""

from __future__ import annotations

import argparse

from locust.argument_parser import get_empty_argument_parser

from kit import options
from scenarios import registry


def kit_parser() -> argparse.ArgumentParser:
    """Locust's empty parser (its own few options) with every option the kit and its profiles register."""
    parser = get_empty_argument_parser(add_help=False)
    parser.prog = "locust -f locustfile.py"
    options.add_arguments(parser)
    registry.add_arguments(parser)
    return parser


def kit_help() -> str:
    return kit_parser().format_help()


if __name__ == "__main__":
    print(kit_help())
