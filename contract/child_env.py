"""How the kit starts a child that runs one of its own modules (`python -m sampler`, `python -m simgateway`,
`python -m analysis`): from any working directory, and never with a user's folder of the same name (an
`agents/` or `analysis/` of their own project) or an installed package of the same name (the OpenAI Agents
SDK installs `agents`) standing in for the kit's.

Only for the kit's own children: a user's gateway command gets the user's environment untouched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = str(Path(__file__).resolve().parent.parent)


def kit_module_env() -> dict[str, str]:
    """The repo root first on PYTHONPATH: ahead of site-packages, so the kit's packages win."""
    path = os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def kit_module_command(module: str, *args: str) -> list[str]:
    """`python -P -m MODULE ARGS`: -P keeps the working directory off sys.path (run with kit_module_env)."""
    return [sys.executable, "-P", "-m", module, *args]
