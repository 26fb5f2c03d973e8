"""`python -m simgateway --port N [knobs]`: run the simulated agent gateway until SIGTERM/SIGINT.

Parses knobs (bad value: one line, exit 2) and hands over to app.serve; must not hold any behaviour.
"""

from __future__ import annotations

import asyncio
import sys

from simgateway.app import serve
from simgateway.knobs import parse_knobs


def main(argv: list[str] | None = None) -> int:
    knobs = parse_knobs(argv)
    try:
        asyncio.run(serve(knobs))
    except OSError as e:  # e.g. the port is taken
        sys.stderr.write(f"simgateway: error: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
