"""Where the tests find the repository and their own servers and fixtures, wherever a test module sits."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_GATEWAYS = REPO / "tests" / "gateways"  # the real and test gateway servers the tests start
FIXTURES = REPO / "tests" / "fixtures"
