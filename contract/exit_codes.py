"""Process exit codes of a kit run: one place, documented in README.

Nightly jobs page on these; keep them stable. 1 is Locust's own `--exit-code-on-error`.
"""

OK = 0
REQUEST_ERRORS = 1  # Locust's default when any request failed
BAD_INPUT = 2  # wrong option, malformed config/price table, unreachable target at start
TARGET_DIED = 3  # the gateway under test exited or stopped answering mid-run
INVALID_RUN = 4  # the load generator itself was saturated: numbers not trustworthy
THRESHOLD_FAILED = 99  # a threshold (NFR) failed; same number as k6
