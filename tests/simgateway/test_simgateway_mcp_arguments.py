"""The simulator's MCP tools check their arguments against their one input schema, as a real server would."""

from __future__ import annotations

import pytest

from simgateway.mcp_server import argument_error


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({}, "'query' is a required property"),
        ({"query": 3}, "'query' is not of type 'string'"),
        ({"query": "x", "depth": 2}, "additional properties are not allowed ('depth')"),
        ({"query": "x", "limit": 0}, "'limit' 0 is not an integer from 1 to 100"),
        ({"query": "x", "limit": 101}, "'limit' 101 is not an integer from 1 to 100"),
        ({"query": "x", "limit": True}, "'limit' True is not an integer from 1 to 100"),
        ({"query": "x", "limit": 2.5}, "'limit' 2.5 is not an integer from 1 to 100"),
    ],
)
def test_arguments_off_the_schema_are_named(arguments, says):
    assert argument_error(arguments) == says


ON_SCHEMA = [{"query": ""}, {"query": "x", "limit": 1}, {"query": "x", "limit": 100}]


@pytest.mark.parametrize("arguments", ON_SCHEMA)
def test_arguments_on_the_schema_pass(arguments):
    assert argument_error(arguments) is None
