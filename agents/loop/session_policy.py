"""`--session-policy`: how long a simulated agent keeps one gateway session. Sticky sessions make gateways
that keep history (Hermes) resend it every turn, so tokens_in grows with the run's own length.

Names session keys only (every key carries the run id); it never opens or closes a session itself.
"""

from __future__ import annotations

import argparse

from contract.errors import InputError

STICKY = "sticky"  # one session per agent for the whole run (the default)
FRESH = "fresh"  # a new session for every task/turn


def renew_every(policy: str) -> int | None:
    """Turns per session: None for sticky, 1 for fresh, N for a number; ValueError otherwise."""
    if policy == STICKY:
        return None
    if policy == FRESH:
        return 1
    turns = int(policy) if policy.isdigit() else 0
    if turns < 1:
        raise ValueError(f"--session-policy: expected sticky, fresh or a whole number >= 1, got {policy!r}")
    return turns


def session_policy_arg(text: str) -> str:
    """argparse type: the policy text, checked (a bad one is a usage error, exit 2)."""
    try:
        renew_every(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def session_policy(value: object, flag: str) -> str:
    """The setting's conversion (contract/cli.py): the web form's text bypasses argparse's type check."""
    try:
        renew_every(str(value))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return str(value)


def session_key(run_id: str, agent_id: str, turn: int, policy: str) -> str:
    """The session an agent's `turn`-th turn (0-based) belongs to; sticky keeps the one key per agent."""
    every = renew_every(policy)
    base = f"{run_id}-{agent_id}"
    return base if every is None else f"{base}-s{turn // every + 1}"
