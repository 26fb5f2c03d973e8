"""Process exit codes of a kit run: one place, documented in README.

Nightly jobs page on these; keep them stable. 1 is Locust's own `--exit-code-on-error`.
"""

import signal

OK = 0
REQUEST_ERRORS = 1  # Locust's default when any request failed
BAD_INPUT = 2  # wrong option, malformed config/price table, unreachable target at start
TARGET_DIED = 3  # the gateway under test exited or stopped answering mid-run
INVALID_RUN = 4  # the load generator itself was saturated: numbers not trustworthy
DISK_ERROR = 5  # a file of the run directory could not be written (disk full, I/O error)
REPORT_FAILED = 6  # the load ran and its rows are whole, but its report could not be written
LOAD_NOT_DELIVERED = 7  # the load did not happen as asked: no answered request, a worker lost, a stuck round
THRESHOLDS_UNJUDGED = 8  # a threshold the user asked for could not be judged (no data); --allow-unjudged
THRESHOLD_FAILED = 99  # a threshold (NFR) failed; same number as k6
# Interrupted runs end as shells report a death by signal, 128 + the signal's number (Locust, k6 alike)
INTERRUPTED = {
    signal.SIGHUP: 128 + signal.SIGHUP,  # 129: the terminal went away
    signal.SIGINT: 128 + signal.SIGINT,  # 130: Ctrl-C
    signal.SIGTERM: 128 + signal.SIGTERM,  # 143: timeout, CI job limits, docker stop, systemd, Kubernetes
}
