"""What every protocol sends and reads: request bodies encoded once, answers read within the run's bounds,
SSE and its timing, usage, stdio JSON-RPC children, the target's origin."""
