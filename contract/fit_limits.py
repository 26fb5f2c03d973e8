"""The fit profile's limits by the names run.json "fit" records them (scenarios/fit.py judges them live,
analysis/working_fit.py answers from them), in the order the binding one is named when several are
breached at one step; CAP is the ending when none bound before the agent cap."""

from __future__ import annotations

MEMORY, AVAILABLE, CPU, SLO, ERRORS, CAP = "memory", "available memory", "CPU", "SLO", "errors", "cap"
BINDING_ORDER = (MEMORY, AVAILABLE, CPU, SLO, ERRORS)
