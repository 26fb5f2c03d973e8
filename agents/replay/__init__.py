"""Recorded sessions (docs/record-replay.md) replayed as agents, their tool calls with them."""
