"""Fixtures of the kit's tests: Locust's own parser with the kit's options."""

from __future__ import annotations

import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

from kit import options as kit_options
from scenarios import registry


@pytest.fixture
def parse():
    """Locust's own parser with the kit's options, as the locustfile registers them."""

    def parse_args(*argv: str, config: str | None = None):
        parser = get_empty_argument_parser(default_config_files=[config] if config else [])
        setup_parser_arguments(parser)
        kit_options.add_arguments(parser)
        registry.add_arguments(parser)
        return parser.parse_args(list(argv))

    return parse_args
