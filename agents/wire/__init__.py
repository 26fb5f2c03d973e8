"""How every protocol's answers are read: within the run's bounds, SSE and its timing, usage, stdio JSON-RPC
children, the target's origin."""
