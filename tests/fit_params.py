"""FitParams for the fit profile's tests: a 4 s least hold, 12 s longest, an idle step, 2 cores and no
limit but the ones a test names. Not a test module itself."""

from __future__ import annotations

from scenarios.fit import FitParams


def fit_params(**changes) -> FitParams:
    base = dict(
        step_agents=1,
        step_every_s=4.0,
        max_hold_s=12.0,
        max_agents=10,
        baseline_s=4.0,
        memory_budget_bytes=None,
        min_available_bytes=None,
        cpu_limit_pct=None,
        slos=(),
        project=None,
        cores=2,
    )
    return FitParams(**(base | changes))
