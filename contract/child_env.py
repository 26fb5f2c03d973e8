"""The environment for a child process that runs one of the kit's own modules (`python -m sampler`,
`python -m simgateway`): the repo root first on PYTHONPATH, so it starts from any working directory.

Only for the kit's own children: a user's gateway command gets the user's environment untouched.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = str(Path(__file__).resolve().parent.parent)


def kit_module_env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}
